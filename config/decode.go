package config

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// decodeError is a decode hook's complaint about one value.
type decodeError struct {
	value any // nil when the value is a list or mapping
	msg   string
}

func (e *decodeError) Error() string { return e.msg }

func badValue(data any, format string, args ...any) error {
	return &decodeError{value: scalarOrNil(data), msg: fmt.Sprintf(format, args...)}
}

// scalarOrNil returns data if it is a scalar worth quoting in an error, else nil.
func scalarOrNil(data any) any {
	switch data.(type) {
	case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return data
	}
	return nil
}

// describe names the YAML shape of data for error messages.
func describe(data any) string {
	switch reflect.ValueOf(data).Kind() {
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", data)
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	intSliceType        = reflect.TypeFor[[]int]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodeHook converts YAML and environment values to the schema's Go types strictly:
// durations need a unit (except 0), integers must be whole and in range, strings from the
// environment become numbers, booleans and CPU lists, and anything of the wrong shape is
// an error that names the value. It replaces mapstructure's weak typing, which would turn
// true into 1 and 2.5 into 2.
func decodeHook(from, to reflect.Type, data any) (any, error) {
	if data == nil {
		return nil, nil
	}
	switch {
	case to == durationType:
		return decodeDuration(data)
	case reflect.PointerTo(to).Implements(textUnmarshalerType):
		return decodeText(to, data)
	case to == intSliceType:
		if s, ok := data.(string); ok {
			cpus, err := ParseCPUList(s)
			if err != nil {
				return nil, badValue(data, "not a CPU list such as 0-3,6: %v", err)
			}
			return cpus, nil
		}
	}
	switch to.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt(to, data)
	case reflect.Bool:
		switch v := data.(type) {
		case bool:
			return v, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return nil, badValue(data, "want true or false")
			}
			return b, nil
		}
		return nil, badValue(data, "want true or false, got %s", describe(data))
	case reflect.String:
		switch v := data.(type) {
		case string:
			return v, nil
		case int, int64, uint64, float64:
			return fmt.Sprint(v), nil
		}
		return nil, badValue(data, "want a string, got %s", describe(data))
	case reflect.Slice:
		if k := from.Kind(); k != reflect.Slice && k != reflect.Array {
			return nil, badValue(data, "want a list, got %s", describe(data))
		}
	case reflect.Struct:
		if from.Kind() != reflect.Map {
			return nil, badValue(data, "want a mapping, got %s", describe(data))
		}
	}
	return data, nil
}

func decodeDuration(data any) (any, error) {
	switch v := data.(type) {
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, badValue(data, "not a duration (such as 300us, 10ms or 0)")
		}
		return d, nil
	case time.Duration:
		return v, nil
	}
	if f, ok := toFloat(data); ok {
		if f == 0 {
			return time.Duration(0), nil
		}
		return nil, badValue(data, "a duration needs a unit, such as %vus or %vms", data, data)
	}
	return nil, badValue(data, "want a duration such as 300us, got %s", describe(data))
}

func decodeText(to reflect.Type, data any) (any, error) {
	var text string
	switch v := data.(type) {
	case string:
		text = v
	case int, int64, uint64, float64:
		text = fmt.Sprint(v)
	default:
		if reflect.TypeOf(data) == to {
			return data, nil
		}
		return nil, badValue(data, "want a string, got %s", describe(data))
	}
	p := reflect.New(to)
	if err := p.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
		return nil, badValue(data, "%v", err)
	}
	return p.Elem().Interface(), nil
}

func decodeInt(to reflect.Type, data any) (any, error) {
	var n int64
	switch v := reflect.ValueOf(data); v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() > math.MaxInt64 {
			return nil, badValue(data, "out of range")
		}
		n = int64(v.Uint())
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if f != math.Trunc(f) {
			return nil, badValue(data, "want a whole number")
		}
		if f < math.MinInt64 || f >= math.MaxInt64 {
			return nil, badValue(data, "out of range")
		}
		n = int64(f)
	case reflect.String:
		i, err := strconv.ParseInt(strings.TrimSpace(v.String()), 10, 64)
		if err != nil {
			return nil, badValue(data, "want an integer")
		}
		n = i
	default:
		return nil, badValue(data, "want an integer, got %s", describe(data))
	}
	if reflect.New(to).Elem().OverflowInt(n) {
		return nil, badValue(data, "out of range")
	}
	return n, nil
}

func toFloat(data any) (float64, bool) {
	switch v := reflect.ValueOf(data); v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return 0, false
}
