package steps

import (
	"encoding/pem"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/serve"
)

func TestFromConfig(t *testing.T) {
	fsys := fstest.MapFS{"body.json": {Data: []byte(`{"a":1}`)}}
	no := false
	got, err := LoadOptions(pipeline.KindLoad, &LoadConfig{
		Target: "http://127.0.0.1:8080/", Connections: 64, Threads: 4, Duration: "30s", Rate: 1000,
		Timeout: "1s", Method: "post", Headers: map[string]string{"X-B": "2", "X-A": "1"},
		BodyFile: "body.json", KeepAlive: &no,
		URLs: []URLConfig{{URL: "http://127.0.0.1:8080/b", Weight: 3, Headers: map[string]string{"X-C": "3"}}},
	}, fsys)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"a":1}`)
	hdr := [][2]string{{"X-A", "1"}, {"X-B", "2"}}
	want := load.Options{
		Targets: []load.Target{
			{URL: "http://127.0.0.1:8080/", Method: "POST", Headers: hdr, Body: body, Weight: 1},
			{URL: "http://127.0.0.1:8080/b", Method: "POST", Headers: append(hdr, [2]string{"X-C", "3"}), Body: body, Weight: 3},
		},
		Connections: 64, Threads: 4, Duration: 30 * time.Second, Rate: 1000, Timeout: time.Second,
		Close: true, Interval: time.Second, Tag: "load", Streams: 1,
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b func(load.Progress)) bool { return a == nil && b == nil })); d != "" {
		t.Errorf("LoadOptions (-want +got):\n%s", d)
	}

	warm, err := LoadOptions(pipeline.KindWarm, &LoadConfig{Target: "http://h/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if warm.Duration != 5*time.Second || warm.Tag != "warm" {
		t.Errorf("warm defaults: duration %v tag %q", warm.Duration, warm.Tag)
	}
}

func TestFromConfigErrors(t *testing.T) {
	cases := []struct {
		c    LoadConfig
		want string
	}{
		{LoadConfig{}, "needs a target"},
		{LoadConfig{Target: "http://h/", Duration: "ten"}, `duration = "ten"`},
		{LoadConfig{Target: "http://h/", Timeout: "-1s"}, "timeout"},
		{LoadConfig{Target: "http://h/", Interval: "x"}, "interval"},
		{LoadConfig{Target: "http://h/", BodyFile: "missing.json"}, "body_file"},
		{LoadConfig{Target: "http://h/", Body: "a", BodyFile: "b"}, "mutually exclusive"},
		{LoadConfig{Target: "gopher://h/"}, "unsupported scheme"},
		{LoadConfig{Target: "http://h/", Connections: -1}, "connections"},
	}
	for _, tc := range cases {
		_, err := LoadOptions(pipeline.KindLoad, &tc.c, fstest.MapFS{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.c, err, tc.want)
		}
	}
	if _, err := LoadOptions("tune", &LoadConfig{Target: "http://h/"}, nil); err == nil {
		t.Error("LoadOptions accepted a tune step")
	}
}

func TestLoadOptionsHTTP2(t *testing.T) {
	got, err := LoadOptions(pipeline.KindLoad, &LoadConfig{Target: "https://127.0.0.1:8443/", Protocol: "h2", Streams: 10, SNI: "example.test", TLSResume: true}, fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Protocol != measure.ProtoH2 || got.Streams != 10 || got.SNI != "example.test" || !got.TLSResume {
		t.Errorf("options %+v", got)
	}
	no := false
	if _, err := LoadOptions(pipeline.KindLoad, &LoadConfig{Target: "http://127.0.0.1:8080/", Protocol: "h2", KeepAlive: &no}, fstest.MapFS{}); err == nil || !strings.Contains(err.Error(), "not supported with HTTP/2") {
		t.Errorf("keepalive = false with h2: %v", err)
	}
	if _, err := LoadOptions(pipeline.KindLoad, &LoadConfig{Target: "http://127.0.0.1:8080/", Streams: 4}, fstest.MapFS{}); err == nil || !strings.Contains(err.Error(), "streams") {
		t.Errorf("streams without h2: %v", err)
	}
}

// TestLoadOptionsCACert: cacert is read from the pipeline's folder (the
// fs.FS), not the current directory, and its certificates travel in the
// options; a missing file or one without a certificate names the
// attribute.
func TestLoadOptionsCACert(t *testing.T) {
	cert, err := serve.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Leaf.Raw})
	fsys := fstest.MapFS{"certs/ca.pem": {Data: ca}, "key.pem": {Data: []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")}}
	got, err := LoadOptions(pipeline.KindWarm, &LoadConfig{Target: "https://127.0.0.1:8443/", CACert: "certs/ca.pem"}, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got.CACert != "certs/ca.pem" || string(got.CACertPEM) != string(ca) {
		t.Errorf("cacert %q with %d bytes, want certs/ca.pem with the file's %d", got.CACert, len(got.CACertPEM), len(ca))
	}
	for _, c := range []struct{ file, want string }{{"missing.pem", "cacert: "}, {"key.pem", "no PEM certificate in key.pem"}} {
		if _, err := LoadOptions(pipeline.KindLoad, &LoadConfig{Target: "https://127.0.0.1:8443/", CACert: c.file}, fsys); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cacert %s: %v, want %q", c.file, err, c.want)
		}
	}
	// The rule validation applies to the file's content.
	refs := loadRefs(&LoadConfig{CACert: "certs/ca.pem"})
	if len(refs.Files) != 1 || refs.Files[0].Attr != "cacert" || refs.Files[0].Check == nil {
		t.Fatalf("refs %+v, want cacert with a content check", refs.Files)
	}
	if err := refs.Files[0].Check(ca); err != nil {
		t.Errorf("a PEM certificate: %v", err)
	}
	if err := refs.Files[0].Check([]byte("not a certificate")); err == nil {
		t.Error("text without a certificate passed the check")
	}
}
