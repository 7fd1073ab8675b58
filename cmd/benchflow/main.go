// Command benchflow runs declarative web-server benchmark pipelines.
//
// Each subcommand lives in its own file and registers itself on rootCmd in
// an init function; the files are thin: flags in, engine calls out.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/redact"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

var rootCmd = &cobra.Command{
	Use:   "benchflow",
	Short: "Declarative, repeatable web-server benchmarks",
	Long: `benchflow runs web-server performance studies described in one file.

A pipeline (HCL or Starlark) declares a parameter matrix, the services under
test and how to deploy them (local process, Docker, Kubernetes, Nomad), and
steps: provision → tune → warm → load → collect. benchflow expands the matrix
into trials, runs each, tears everything down and writes Parquet results.

  benchflow apply pipelines/quickstart.hcl     run a pipeline
  benchflow report results/latest              summarise it
  benchflow load -c 64 -d 10s http://127.0.0.1:8080/   one-off load, like wrk`,
	SilenceUsage:  true,
	SilenceErrors: true,
	Version:       version,
}

// exitError carries an exit code through cobra without printing twice.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// stdout and stderr redact sensitive values and URL user-info from
// everything the commands print (see engine/redact).
var (
	stdout = redact.Default.Writer(os.Stdout)
	stderr = redact.Default.Writer(os.Stderr)
)

func init() {
	// --version has no -v: -v is --verbose in apply and gc.
	rootCmd.Flags().Bool("version", false, "print the version and exit")
}

func main() {
	rootCmd.SetOut(stdout)
	rootCmd.SetErr(stderr)
	os.Exit(execute())
}

func execute() int {
	err := rootCmd.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "Error:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "Error:", err)
	return 1
}
