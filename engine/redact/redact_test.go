package redact

import (
	"bytes"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	var s Set
	s.Add("s3cr3t/tok+en", "ab") // "ab" is too short to redact
	for _, in := range []string{
		"token s3cr3t/tok+en in text",
		"query ?t=s3cr3t%2Ftok%2Ben",
		"path /s3cr3t%2Ftok+en/",
		`json {"v":"s3cr3t/tok+en"}`,
	} {
		if got := s.String(in); strings.Contains(got, "s3cr3t") || !strings.Contains(got, Mark) {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
	if got := s.String("ab"); got != "ab" {
		t.Errorf("short value redacted: %q", got)
	}
	if got := s.String("GET http://user:pw@127.0.0.1:8080/x failed"); got != "GET http://"+Mark+"@127.0.0.1:8080/x failed" {
		t.Errorf("user-info: %q", got)
	}
	if got := s.String("mail me at a@b.c"); got != "mail me at a@b.c" {
		t.Errorf("not a URL: %q", got)
	}
	var b bytes.Buffer
	w := s.Writer(&b)
	if n, err := w.Write([]byte("x s3cr3t/tok+en\n")); err != nil || n != 16 {
		t.Fatal(n, err)
	}
	if b.String() != "x "+Mark+"\n" {
		t.Errorf("writer: %q", b.String())
	}
}
