package steps

import (
	"encoding/pem"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/serve"
)

// TestLoadOptionsAfterValidate: LoadOptions of a config the kind's
// Validate checked (validateLoad, as TrialEval.Step runs it for each
// trial) takes the durations and Validate's field errors from that check
// instead of parsing and validating again, and returns the very options
// and error, word for word, that it returns for a config nothing checked.
func TestLoadOptionsAfterValidate(t *testing.T) {
	cert, err := serve.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"ca.pem":   {Data: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Leaf.Raw})},
		"key.pem":  {Data: []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")},
		"body.txt": {Data: []byte("from a file")},
	}
	no := false
	for i, c := range []LoadConfig{
		{Target: "http://h/"},
		{Target: "http://h/", Duration: "3s", Timeout: "1s", Interval: "500ms", Connections: 4, Threads: 2, Requests: 10},
		{Target: "http://h/", Duration: "0s"},
		{Target: "http://h/", Duration: "0s", Timeout: "soon", Nap: "x"},
		{Target: "http://h/", Duration: "ten", Interval: "1x"},
		{Target: "http://h/", Timeout: "-1s", BusyPoll: "1h"},
		{Target: "http://h/", Connections: -1, Threads: 1 << 20, Rate: -3},
		{Target: "http://127.0.0.1:8080/", Protocol: "h2", KeepAlive: &no},
		{Target: "http://127.0.0.1:8080/", Streams: 4, Nap: "1ms"},
		{URLs: []URLConfig{{URL: "http://h/a"}, {URL: "ftp://h/b", Weight: -2}}, BodyFile: "body.txt"},
		{URLs: []URLConfig{{URL: "http://h/a", Body: "own"}, {URL: "http://h/b"}}, BodyFile: "body.txt", Method: "post"},
		{Target: "https://127.0.0.1:8443/", CACert: "ca.pem"},
		{Target: "https://127.0.0.1:8443/", CACert: "key.pem", Connections: 1 << 30},
		{Target: "https://127.0.0.1:8443/", CACert: "missing.pem"},
		{Script: "requests.star"},
		{Target: "http://h/", Until: "steady", Window: "2s", Duration: "4s"},
	} {
		for _, kind := range []string{pipeline.KindLoad, pipeline.KindWarm} {
			t.Run(fmt.Sprintf("%d-%s", i, kind), func(t *testing.T) {
				fresh := c
				want, wantErr := LoadOptions(kind, &fresh, fsys)
				checked := c
				st := &pipeline.Step{Kind: kind, Name: "l", Body: &hclsyntax.Body{}, DeclRange: hcl.Range{Filename: "p.hcl"}}
				validateLoad(st, &checked)
				if checked.checked == nil {
					t.Fatal("validateLoad kept no check")
				}
				got, gotErr := LoadOptions(kind, &checked, fsys)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("error after validateLoad:\n  %v\nwithout:\n  %v", gotErr, wantErr)
				}
				if d := cmp.Diff(want, got, cmpopts.IgnoreFields(load.Options{}, "Requester", "Progress", "OnResponse")); d != "" {
					t.Errorf("options after validateLoad differ (-without +after):\n%s", d)
				}
			})
		}
	}
}
