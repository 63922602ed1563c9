package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/uiod/uiod/internal/clip"
)

// Limits of a configuration document. A real configuration is a few KiB with nesting five
// levels deep; the limits keep the cost of reading a hostile one linear in its size and
// its memory small (the YAML parser holds about a hundred bytes per node).
const (
	// MaxDocumentSize bounds the bytes read from a file or standard input.
	MaxDocumentSize = 1 << 20
	// MaxDepth bounds how deeply mappings and lists nest (the top mapping is level 1).
	MaxDepth = 16
	// MaxNodes bounds the values of a document, counting each alias as often as it is
	// used, so that a small file of nested aliases cannot expand into a huge one.
	MaxNodes = 1 << 16
)

// LimitError is a document refused by one of the size, depth or node-count limits.
type LimitError struct {
	What  string // "size", "depth" or "nodes"
	Limit int
	Line  int // where the limit was crossed; 0 for the size
}

// Error says which limit the document crossed.
func (e *LimitError) Error() string {
	switch e.What {
	case "size":
		return fmt.Sprintf("document is larger than %d bytes", e.Limit)
	case "depth":
		return fmt.Sprintf("line %d: nested more than %d levels deep", e.Line, e.Limit)
	}
	return fmt.Sprintf("line %d: more than %d values (aliases counted each time they are used)", e.Line, e.Limit)
}

// readDocument reads at most MaxDocumentSize bytes from r; a longer input is a *ParseError
// wrapping a *LimitError, a failing reader an error wrapping the reader's.
func readDocument(r io.Reader) ([]byte, error) {
	doc, err := io.ReadAll(io.LimitReader(r, MaxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if len(doc) > MaxDocumentSize {
		return nil, &ParseError{Err: &LimitError{What: "size", Limit: MaxDocumentSize}}
	}
	return doc, nil
}

// parseDocument parses one YAML document into plain values: nested map[string]any, []any
// and scalars. It refuses, as a *ParseError, a document that is not YAML, is not a
// mapping, holds a second document, nests deeper than MaxDepth or expands to more than
// MaxNodes values; and, as FieldErrors with their lines, keys given twice in one mapping,
// or twice in different case (keys are case-insensitive: one of the two would be lost).
func parseDocument(doc []byte) (map[string]any, fieldErrors, error) {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]any{}, nil, nil
		}
		return nil, nil, &ParseError{Err: err}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, nil, &ParseError{Err: fmt.Errorf("line %d: a second YAML document; a configuration is one document", next.Line)}
	case !errors.Is(err, io.EOF):
		return nil, nil, &ParseError{Err: err}
	}
	top := &root
	if top.Kind == yaml.DocumentNode {
		if len(top.Content) == 0 {
			return map[string]any{}, nil, nil
		}
		top = top.Content[0]
	}
	b := treeBuilder{}
	v, err := b.value(top, "", 1)
	if err != nil {
		return nil, nil, &ParseError{Err: err}
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, b.errs, nil
	case map[string]any:
		return m, b.errs, nil
	}
	return nil, nil, &ParseError{Err: fmt.Errorf("line %d: the document is %s, want a mapping of keys", top.Line, describe(v))}
}

// treeBuilder converts a yaml.Node tree to plain values within the limits.
type treeBuilder struct {
	nodes int
	errs  fieldErrors
}

func (b *treeBuilder) value(n *yaml.Node, path string, depth int) (any, error) {
	b.nodes++
	if b.nodes > MaxNodes {
		return nil, &LimitError{What: "nodes", Limit: MaxNodes, Line: n.Line}
	}
	if depth > MaxDepth {
		return nil, &LimitError{What: "depth", Limit: MaxDepth, Line: n.Line}
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: unknown alias", n.Line)
		}
		return b.value(n.Alias, path, depth)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := b.value(c, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	case yaml.MappingNode:
		m := map[string]any{}
		if err := b.mapping(m, map[string]*yaml.Node{}, n, path, depth); err != nil {
			return nil, err
		}
		return m, nil
	case yaml.DocumentNode:
		return nil, fmt.Errorf("line %d: a nested document", n.Line)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

// mapping adds the pairs of mapping node n to m. seen holds the keys of m by lower-cased
// name. Keys merged in with "<<" never override keys given in the mapping itself.
func (b *treeBuilder) mapping(m map[string]any, seen map[string]*yaml.Node, n *yaml.Node, path string, depth int) error {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		b.nodes++
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			// The key is the alias's value, met where the alias is.
			key := *k.Alias
			key.Line = k.Line
			k = &key
		}
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a mapping key must be a plain value, not %s", k.Line, kindName(k.Kind))
		}
		if k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		kp := joinPath(path, k.Value)
		lower := strings.ToLower(k.Value)
		if prev, dup := seen[lower]; dup {
			if prev.Value == k.Value {
				b.errs.add(kp, nil, "given twice (lines %d and %d)", prev.Line, k.Line)
			} else {
				b.errs.add(kp, nil, "keys %s (line %d) and %s (line %d) differ only in case; keys are case-insensitive", clip.Quote(prev.Value), prev.Line, clip.Quote(k.Value), k.Line)
			}
			continue
		}
		seen[lower] = k
		val, err := b.value(v, kp, depth+1)
		if err != nil {
			return err
		}
		m[k.Value] = val
	}
	for _, mv := range merges {
		if err := b.merge(m, seen, mv, path, depth); err != nil {
			return err
		}
	}
	return nil
}

// merge adds the keys of a "<<" value (a mapping, or a list of mappings, or aliases of
// them) that m does not have yet. A merged mapping counts as a level deeper than m, so
// that a mapping merging itself ends at the depth limit.
func (b *treeBuilder) merge(m map[string]any, seen map[string]*yaml.Node, v *yaml.Node, path string, depth int) error {
	b.nodes++
	if b.nodes > MaxNodes {
		return &LimitError{What: "nodes", Limit: MaxNodes, Line: v.Line}
	}
	if depth >= MaxDepth {
		return &LimitError{What: "depth", Limit: MaxDepth, Line: v.Line}
	}
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		sub, subSeen := map[string]any{}, map[string]*yaml.Node{}
		if err := b.mapping(sub, subSeen, v, path, depth+1); err != nil {
			return err
		}
		for lower, k := range subSeen {
			if _, ok := seen[lower]; !ok {
				seen[lower] = k
				m[k.Value] = sub[k.Value]
			}
		}
		return nil
	case yaml.SequenceNode:
		for _, c := range v.Content {
			if c.Kind == yaml.SequenceNode {
				return fmt.Errorf("line %d: << merges mappings, not lists", c.Line)
			}
			if err := b.merge(m, seen, c, path, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("line %d: << merges mappings, not %s", v.Line, kindName(v.Kind))
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}
