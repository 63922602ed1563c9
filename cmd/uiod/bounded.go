package main

import (
	"sort"
	"strconv"
	"strings"

	"github.com/uiod/uiod/internal/clip"
)

// boundMessage returns msg, the text of an error about to be printed, with the user's
// input in it quoted up to a bounded prefix (package clip): every over-long argument,
// --flag=value value and UIOD_* environment value, wherever the message (cobra's, a
// parser's, an os.PathError's) quotes it whole; and every other over-long word shortened
// too. Messages uiod builds itself clip their input where they quote it; this catches
// what the libraries quote.
func boundMessage(msg string, args, environ []string) string {
	var inputs []string
	for _, a := range args {
		inputs = append(inputs, a)
		if strings.HasPrefix(a, "-") {
			if _, v, ok := strings.Cut(a, "="); ok {
				inputs = append(inputs, v)
			}
		}
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "UIOD_") {
			inputs = append(inputs, v)
		}
	}
	sort.SliceStable(inputs, func(i, j int) bool { return len(inputs[i]) > len(inputs[j]) })
	for _, in := range inputs {
		if len(in) <= clip.Max || !strings.Contains(msg, in) && !strings.Contains(msg, strconv.Quote(in)) {
			continue
		}
		msg = strings.ReplaceAll(msg, strconv.Quote(in), clip.Quote(in))
		msg = strings.ReplaceAll(msg, in, clip.String(in))
	}
	return clip.Tokens(msg)
}
