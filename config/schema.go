package config

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The schema is Config's type: these helpers walk it along a key path, to put errors in
// schema order and to suggest the key a misspelt one was meant to be.

var configType = reflect.TypeFor[Config]()

// pathSegment is one step of a key path: a key, or a list index.
type pathSegment struct {
	key   string
	index int // when key is ""
}

// splitPath splits "ports[1].wire" into ports, [1], wire.
func splitPath(path string) []pathSegment {
	var segs []pathSegment
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(segs, pathSegment{key: path})
			}
			n, err := strconv.Atoi(path[1:end])
			if err != nil {
				return append(segs, pathSegment{key: path[:end+1]})
			}
			segs = append(segs, pathSegment{index: n})
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segs = append(segs, pathSegment{key: path[:end]})
			path = path[end:]
		}
	}
	return segs
}

// schemaKeys returns the keys of a struct type in field order.
func schemaKeys(t reflect.Type) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	keys := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if k := t.Field(i).Tag.Get("mapstructure"); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// fieldByKey finds the field of struct type t whose key is key. It returns the key's
// position among t's keys, or the number of keys if there is no such field.
func fieldByKey(t reflect.Type, key string) (pos int, ft reflect.Type, ok bool) {
	if t == nil || t.Kind() != reflect.Struct {
		return 0, nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		k := t.Field(i).Tag.Get("mapstructure")
		if k == "" || k == "-" {
			continue
		}
		if k == key {
			return pos, t.Field(i).Type, true
		}
		pos++
	}
	return pos, nil, false
}

// elem steps from a list type to its element type (nil if t is not a list).
func elem(t reflect.Type) reflect.Type {
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

// pathOrder maps a key path to a sort key: each key's position in its struct (unknown
// keys after the known ones) and each list index.
func pathOrder(path string) []int {
	t := configType
	var order []int
	for _, s := range splitPath(path) {
		if s.key == "" {
			order = append(order, s.index)
			t = elem(t)
			continue
		}
		pos, ft, _ := fieldByKey(t, s.key)
		order = append(order, pos)
		t = ft
	}
	return order
}

// sortFieldErrors puts errors in schema order; errors on the same path keep their order.
func sortFieldErrors(errs []FieldError) {
	type keyed struct {
		order []int
		FieldError
	}
	ks := make([]keyed, len(errs))
	for i, e := range errs {
		ks[i] = keyed{pathOrder(e.Path), e}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := slices.Compare(a.order, b.order); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	for i := range ks {
		errs[i] = ks[i].FieldError
	}
}

// suggest returns the allowed key closest to an unknown one, or "".
func suggest(key string, allowed []string) string {
	best, bestDist := "", 3 // suggest only within two edits
	for _, a := range allowed {
		if d := editDistance(key, a); d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein (optimal string alignment) distance.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// schemaTree returns the document raw with the keys of every mapping the schema reads as a
// section spelled as the schema spells them (in lower case: keys are case-insensitive),
// without the keys the schema does not have, and adds an "unknown key" error for each of
// those, by its full path as the file spells it (with a suggestion). Only the schema's
// keys go on to viper, which merges a mapping in time quadratic in its number of keys.
// Mappings the schema reads as maps (forward.police) are left as they are: the decoder's
// ErrorUnused refuses unknown keys inside their values.
func schemaTree(raw any, t reflect.Type, path string, errs *fieldErrors) any {
	switch {
	case isSection(t):
		m, ok := raw.(map[string]any)
		if !ok {
			return raw
		}
		out := make(map[string]any, len(m))
		for key, val := range m {
			kp := joinPath(path, key)
			if f, ok := fieldFold(t, key); ok {
				out[f.Tag.Get("mapstructure")] = schemaTree(val, f.Type, kp, errs)
				continue
			}
			msg := "unknown key"
			if s := suggest(strings.ToLower(key), schemaKeys(t)); s != "" {
				msg += "; did you mean " + s + "?"
			}
			errs.add(kp, nil, "%s", msg)
		}
		return out
	case t.Kind() == reflect.Slice:
		l, ok := raw.([]any)
		if !ok {
			return raw
		}
		out := make([]any, len(l))
		for i, v := range l {
			out[i] = schemaTree(v, t.Elem(), path+"["+strconv.Itoa(i)+"]", errs)
		}
		return out
	}
	return raw
}

// isSection reports whether t is decoded from a mapping of keys.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshalerType)
}

// fieldFold returns the field of struct t whose key is key in any case.
func fieldFold(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if strings.EqualFold(t.Field(i).Tag.Get("mapstructure"), key) {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}
