package config

// unmarshalText sets *dst to parse(text), leaving *dst as it was when parse fails: the
// UnmarshalText of each schema type written in text (Size, Threshold, Wire), with its
// parser's rules.
func unmarshalText[T any](dst *T, text []byte, parse func(string) (T, error)) error {
	v, err := parse(string(text))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
