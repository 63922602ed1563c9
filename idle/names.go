package idle

import "fmt"

// names is the table of an enumeration's names, indexed by value: String and Parse of
// Mode, Delivery and State read it, so that a value and its name are written once.
type names[T ~int | ~int32] struct {
	typ  string   // the Go type, for a value without a name
	list []string // list[v] is value v's name
}

// name returns v's name, or typ(v) for a value outside the table.
func (n names[T]) name(v T) string {
	if v >= 0 && int(v) < len(n.list) {
		return n.list[v]
	}
	return fmt.Sprintf("%s(%d)", n.typ, int(v))
}

// parse returns the value named s.
func (n names[T]) parse(s string) (T, bool) {
	for i, x := range n.list {
		if x == s {
			return T(i), true
		}
	}
	return 0, false
}
