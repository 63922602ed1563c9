package config

import (
	"fmt"
	"strings"

	"github.com/uiod/uiod/internal/clip"
)

// FieldError is one problem with one configuration value.
type FieldError struct {
	// Path is the key's full path, such as "ports[1].rx_ring" or "poll.sleep_min".
	Path string
	// Value is the offending value, or nil when the problem is a missing value.
	Value any
	// Msg says what is wrong.
	Msg string
	// Err is the library's own error behind Msg, when a library's validation (such as
	// the idle policy's) refused the value; nil otherwise.
	Err error
}

// Error formats the error as "path = value: msg" (or "path: msg" without a value). The
// path and value are the user's: each is quoted up to a bounded prefix (package clip),
// and so is any long word of the message.
func (e FieldError) Error() string {
	if e.Value == nil {
		return clip.String(e.Path) + ": " + clip.Tokens(e.Msg)
	}
	return fmt.Sprintf("%s = %s: %s", clip.String(e.Path), formatValue(e.Value), clip.Tokens(e.Msg))
}

// Unwrap returns the library error behind the problem, or nil.
func (e FieldError) Unwrap() error { return e.Err }

// formatValue quotes a value for a message: a string as a Go literal, anything else as
// fmt prints it, each up to a bounded prefix.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return clip.Quote(v)
	}
	return clip.String(fmt.Sprint(v))
}

// ValidationError lists every problem found in a configuration, in schema order (the
// order of the keys in Config; list items by index).
type ValidationError struct {
	Errors []FieldError
}

// Error returns one line per problem.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual FieldErrors, for errors.As.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

// ParseError is returned when the configuration is not readable YAML.
type ParseError struct {
	Err error
}

// Error describes the syntax problem.
func (e *ParseError) Error() string { return "parse config: " + clip.Tokens(e.Err.Error()) }

// Unwrap returns the YAML parser's error.
func (e *ParseError) Unwrap() error { return e.Err }

// fieldErrors collects FieldErrors while a configuration is checked.
type fieldErrors []FieldError

// err returns the errors in schema order as a *ValidationError, or nil when there are none.
func (l fieldErrors) err() error {
	if len(l) == 0 {
		return nil
	}
	sortFieldErrors(l)
	return &ValidationError{Errors: l}
}

func (l *fieldErrors) add(path string, value any, format string, args ...any) {
	*l = append(*l, FieldError{Path: path, Value: value, Msg: fmt.Sprintf(format, args...)})
}
