package main

import (
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestProtocolsPipeline runs pipelines/protocols.hcl as its header says
// (shortened): every cell loads benchflow serve --h3 over the protocol it
// names, and trials.parquet says that protocol was spoken, without errors.
func TestProtocolsPipeline(t *testing.T) {
	out := t.TempDir()
	b, err := exec.Command(bin, "apply", "../../pipelines/protocols.hcl", "--var", "duration=1s", "--repetitions", "1", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`SELECT param_protocol, protocol, alpn, sum(requests), sum(errors), min(status_2xx)
		FROM read_parquet('%s') WHERE step = 'main' AND NOT discarded GROUP BY ALL ORDER BY 1`, filepath.Join(out, "latest", "trials.parquet")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var want, got, alpn string
		var requests, errors, ok2xx int64
		if err := rows.Scan(&want, &got, &alpn, &requests, &errors, &ok2xx); err != nil {
			t.Fatal(err)
		}
		seen[want] = true
		wantALPN := map[string]string{"http/1.1": "http/1.1", "h2": "h2", "h3": "h3"}[want]
		if got != want || alpn != wantALPN || requests == 0 || errors != 0 || ok2xx == 0 {
			t.Errorf("cell protocol=%s: spoke %q (alpn %q, want %q), %d requests, %d errors, min 2xx %d", want, got, alpn, wantALPN, requests, errors, ok2xx)
		}
	}
	if len(seen) != 3 {
		t.Errorf("cells seen: %v, want http/1.1, h2 and h3", seen)
	}
}
