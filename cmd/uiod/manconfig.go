package main

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/uiod/uiod/config"
)

// configManName is the file name of the configuration's man page.
const configManName = "uiod.yaml.5"

// configKey is one key of the configuration schema as its page documents it.
type configKey struct {
	path  string // "ports[].rx_ring"
	value string // its value in the example, "" if the example leaves it out
	text  []string
}

// schemaKeys lists the keys of the configuration schema (config.Config's mapstructure
// tags) in schema order, sections before their keys: "log", "log.level", ...; a list of
// sections is "ports[]".
func schemaKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		k := t.Field(i).Tag.Get("mapstructure")
		if k == "" || k == "-" {
			continue
		}
		ft, path, list := t.Field(i).Type, prefix+k, ""
		if ft.Kind() == reflect.Slice && isSection(ft.Elem()) {
			ft, list = ft.Elem(), "[]"
		}
		keys = append(keys, path)
		if isSection(ft) {
			keys = append(keys, schemaKeys(ft, path+list+".")...)
		}
	}
	return keys
}

// isSection reports whether t is a struct of keys (not a value such as a Threshold).
func isSection(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("mapstructure"); k != "" && k != "-" {
			return true
		}
	}
	return false
}

// exampleKeys reads each key's value and comments from the commented example
// configuration, by path (the first list item's value; comments of any item). head is
// the file's opening comment.
func exampleKeys(text string) (keys map[string]*configKey, head string, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, "", err
	}
	keys = map[string]*configKey{}
	var walk func(n *yaml.Node, prefix string) error
	walk = func(n *yaml.Node, prefix string) error {
		switch n.Kind {
		case yaml.SequenceNode:
			for _, e := range n.Content {
				if e.Kind == yaml.MappingNode {
					if err := walk(e, strings.TrimSuffix(prefix, ".")+"[]."); err != nil {
						return err
					}
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				path := prefix + k.Value
				ck := keys[path]
				if ck == nil { // the first list item's value and comments
					ck = &configKey{path: path}
					for _, c := range []string{k.HeadComment, k.LineComment, v.LineComment} {
						ck.text = append(ck.text, commentLines(c)...)
					}
					keys[path] = ck
					// A value, a list of values, or a mapping written inline (a map key
					// such as forward.police) is shown as the example's value.
					if v.Kind == yaml.ScalarNode || v.Kind == yaml.SequenceNode && !isSectionList(v) || v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle != 0 {
						flow := *v
						flow.Style, flow.HeadComment, flow.LineComment, flow.FootComment = yaml.FlowStyle, "", "", ""
						b, err := yaml.Marshal(&flow)
						if err != nil {
							return fmt.Errorf("%s: %w", path, err)
						}
						ck.value = strings.TrimSpace(string(b))
					}
				}
				if err := walk(v, path+"."); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if len(doc.Content) == 0 {
		return nil, "", fmt.Errorf("the example is empty")
	}
	return keys, doc.HeadComment, walk(doc.Content[0], "")
}

// exampleDocs reads the keys of the example configurations: the default one's, then
// those only a router uses (forward.routes) from the l3fwd example, then the bridge's and
// the kernel-routed router's (forward.max_routes).
func exampleDocs() (map[string]*configKey, string, error) {
	docs, head, err := exampleKeys(config.Example())
	if err != nil {
		return nil, "", fmt.Errorf("the example configuration: %w", err)
	}
	for _, ex := range []struct {
		name string
		yaml string
	}{{"l3fwd", config.ExampleL3fwd()}, {"bridge", config.ExampleBridge()}, {"router", config.ExampleRouter()}} {
		keys, _, err := exampleKeys(ex.yaml)
		if err != nil {
			return nil, "", fmt.Errorf("the %s example configuration: %w", ex.name, err)
		}
		for k, v := range keys {
			if d, ok := docs[k]; !ok || d.value == "" && len(d.text) == 0 {
				docs[k] = v
			}
		}
	}
	return docs, head, nil
}

// isSectionList reports whether a sequence holds sections (mappings) rather than values.
func isSectionList(n *yaml.Node) bool {
	return len(n.Content) > 0 && n.Content[0].Kind == yaml.MappingNode
}

// commentLines strips the "# " of each line of a YAML comment.
func commentLines(c string) []string {
	if c == "" {
		return nil
	}
	var out []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(l), "#"), " ")
		out = append(out, l)
	}
	return out
}

// configManPage generates uiod.yaml(5): every key of the schema, with its value in the
// example configuration and the example's comments on it. A key the example does not
// comment says where it is described (its sibling of the same kind, or its section); one
// the example leaves out says so.
func configManPage(date time.Time, source string) (string, error) {
	docs, head, err := exampleDocs()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, ".nh\n.TH \"UIOD.YAML\" \"5\" %q %q \"uiod manual\"\n", date.Format("Jan 2006"), source)
	b.WriteString(".SH NAME\nuiod.yaml \\- configuration of the uiod daemon\n")
	b.WriteString(".SH SYNOPSIS\n\\fI/etc/uiod/uiod.yaml\\fP\n.SH DESCRIPTION\n")
	writeRoffText(&b, commentLines(head))
	b.WriteString(".PP\nThe keys follow, each with its value in the example that \\fBuiod config example\\fP prints.\n")
	b.WriteString(".SH KEYS\n")
	keys := schemaKeys(reflect.TypeFor[config.Config](), "")
	prev := map[string]string{} // the last key seen under each section
	for i, path := range keys {
		k, inExample := docs[path]
		if !inExample {
			k = &configKey{path: path}
		}
		section, name := splitKey(path)
		hasKeys := i+1 < len(keys) && strings.HasPrefix(keys[i+1], strings.TrimSuffix(path, "[]")+".") ||
			i+1 < len(keys) && strings.HasPrefix(keys[i+1], path+"[].")
		switch {
		case section == "" && hasKeys: // a top-level section: a heading, its comment a paragraph
			fmt.Fprintf(&b, ".SS %s\n", path)
			writeRoffText(&b, k.text)
			prev[section] = name
			continue
		case section == "":
			fmt.Fprintf(&b, ".SS %s\n", path)
		}
		b.WriteString(".TP\n\\fB" + roffEscape(path) + "\\fP")
		if k.value != "" {
			b.WriteString(": " + roffEscape(k.value))
		}
		b.WriteString("\n")
		switch {
		case !inExample:
			b.WriteString("Not in the example; " + strings.Replace(fallbackText(section, "", ""), "See", "see", 1) + "\n")
		case strings.TrimSpace(strings.Join(k.text, "")) == "":
			b.WriteString(fallbackText(section, name, prev[section]) + "\n")
		default:
			writeRoffText(&b, k.text)
		}
		prev[section] = name
	}
	b.WriteString(".SH ENVIRONMENT\n.TP\n\\fBUIOD_\\fP\\fIKEY\\fP\n")
	b.WriteString("Overrides a scalar key outside ports: UIOD_ and the key in upper case with dots as underscores, e.g. UIOD_POLL_MODE=busy, UIOD_METRICS_LISTEN= (empty: off), UIOD_STATE_DIR=/tmp/uiod.\n")
	b.WriteString(".SH FILES\n.TP\n\\fI/etc/uiod/uiod.yaml\\fP\nThe packaged configuration, read by the systemd unit.\n")
	b.WriteString(".SH SEE ALSO\n\\fBuiod(8)\\fP, \\fBuiod-run(8)\\fP, \\fBuiod-config-validate(8)\\fP, \\fBuiod-config-example(8)\\fP\n")
	return b.String(), nil
}

// splitKey splits "ports[].rx_ring" into its section "ports[]" and name "rx_ring"; a
// top-level key has no section.
func splitKey(path string) (section, name string) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}

// fallbackText describes a key the example does not comment: like the sibling before it
// when their names share a word (tx_ring after rx_ring), else as its section says.
func fallbackText(section, name, before string) string {
	if before != "" {
		for _, w := range strings.Split(before, "_") {
			if strings.Contains("_"+name+"_", "_"+w+"_") {
				return "As \\fB" + before + "\\fP."
			}
		}
	}
	return "See \\fB" + strings.TrimSuffix(section, "[]") + "\\fP."
}

// writeRoffText writes comment lines as roff: a line indented beyond the comment's own
// margin (a table of values) is kept as it is, an empty line starts a paragraph.
func writeRoffText(b *strings.Builder, lines []string) {
	pre := false
	for _, l := range lines {
		indented := strings.HasPrefix(l, "  ")
		if indented != pre {
			if indented {
				b.WriteString(".nf\n")
			} else {
				b.WriteString(".fi\n")
			}
			pre = indented
		}
		if strings.TrimSpace(l) == "" {
			b.WriteString(".sp\n")
			continue
		}
		b.WriteString(roffEscape(l) + "\n")
	}
	if pre {
		b.WriteString(".fi\n")
	}
}

// roffEscape escapes s for a roff text line.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
