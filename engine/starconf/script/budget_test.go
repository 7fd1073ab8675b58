package script_test

import (
	"context"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/starconf/script"
)

// A request script has the pipeline's allocation budget, in its top level
// and in each call of request(): building 16 MiB within a 1 MiB budget
// fails, naming the budget.
func TestScriptAllocationBudget(t *testing.T) {
	for _, src := range []string{
		"x = \"x\" * 65536\ny = \"\".join([x] * 256)\ndef request():\n    return \"/\"\n",
		"x = [0] * 1000000000\ndef request():\n    return \"/\"\n",
		"x = \"x\" * 65536\ndef request(i):\n    return \"/\" + (\"%s\" * 256) % tuple([x] * 256)\n",
		"x = \"x\" * 65536\ndef request(i):\n    return \"/\" + json.encode([x] * 256)\n",
		"x = \"x\" * 65536\ndef request(i):\n    return \"/\" + str(len(list(x.elems())))\n",
	} {
		s, err := script.LoadSource(context.Background(), "requests.star", []byte(src), "http://127.0.0.1:9", script.Options{MaxAlloc: 1 << 20})
		if err == nil {
			_, err = s.Pool()
		}
		if err == nil || !strings.Contains(err.Error(), "memory budget exceeded") {
			t.Errorf("%q: want the memory budget's error, got %v", src, err)
		}
	}
}
