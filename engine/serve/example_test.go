package serve_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/benchflow/benchflow/engine/serve"
)

func ExampleNew() {
	h, err := serve.New(serve.Config{Size: 6})
	if err != nil {
		panic(err)
	}
	for _, path := range []string{"/", "/bytes/14"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		fmt.Printf("%s: %d, Content-Length %s, %q\n", path, w.Code, w.Header().Get("Content-Length"), w.Body.String())
	}
	// Output:
	// /: 200, Content-Length 6, "hello\n"
	// /bytes/14: 200, Content-Length 14, "hello\nhello\nhe"
}
