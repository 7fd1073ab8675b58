package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/agent"
	"github.com/benchflow/benchflow/engine/units"
)

func init() { rootCmd.AddCommand(newAgentCmd()) }

// newAgentCmd builds `benchflow agent`.
func newAgentCmd() *cobra.Command {
	var (
		listen    string
		index     int
		idle      time.Duration
		linger    bool
		tokenFile string
		allow     []string
		insecure  bool
		tlsFiles  agent.TLSFiles
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a load agent: one share of a distributed load step",
		Long: `agent runs one load generator of a load or warm step with an agents block
(see docs/distributed.md). Pipelines start agents themselves, through a provider
(local processes, Kubernetes pods, a Nomad raw_exec job); you rarely run it by hand.

The agent listens on --listen and speaks a small HTTP+JSON protocol with the
benchflow that runs the pipeline (the controller): hello, clock probes (the
controller measures the agent's clock offset and corrects the start instant by
it), a start command with the agent's share of the load and the common start
instant, and the result (HDR histograms encoded losslessly, counters, its own
CPU time and open-loop lag). It prints "agent listening on ADDR" once ready.

An agent runs loads one after another (a capacity search sends one per
probe), each bounded like every load (requests and duration), and exits when the controller stops it or after --idle without a controller
(nothing open and no request), which also cancels a running load. With
--linger, a stop from the controller only cancels the load: the agent exits on
SIGTERM/SIGINT or after --idle, so a scheduler that counts a task ending on its
own as a failure (a Nomad service job) sees it stopped instead (Nomad agents
run with it).

Every request must carry the run's secret token ("Authorization: Bearer
TOKEN"); any other is refused with 401. The agent reads the token from the
file --token-file (or $BENCHFLOW_AGENT_TOKEN_FILE) names, which only its
owner may read (mode 0600), or from $BENCHFLOW_AGENT_TOKEN — never from the
command line — and refuses to start without one unless --insecure. It loads
only the targets it is started with: --allow-target (repeatable) or
$BENCHFLOW_AGENT_TARGETS (URLs separated by newlines or spaces); a start
naming any other target is refused. Pipelines do all this themselves: benchflow makes a fresh token for
each launch and hands it to the agents through the provider (a file, a
Kubernetes Secret, a Nomad variable).

With --tls-ca, --tls-cert and --tls-key the agent serves HTTPS only (TLS 1.3)
and refuses, during the handshake, a client without a certificate signed by
the CA (mutual TLS, for agents that cross a network); the token is still
required. Pipelines do not set these yet: for now they are for agents run by
hand with a controller that uses engine/agent's TLSFiles.Client.`,
		Example: `  umask 077; head -c 32 /dev/urandom | xxd -p -c 64 > token
  benchflow agent --listen 127.0.0.1:0 --token-file token --allow-target http://127.0.0.1:8080/
  BENCHFLOW_AGENT_TOKEN_FILE=token BENCHFLOW_AGENT_TARGETS=http://10.0.0.5/ benchflow agent --listen :7700 --idle 2m
  benchflow agent --insecure --allow-target http://127.0.0.1:8080/   # local experiments only: anyone reaching the port commands it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			shift, err := agent.ParseClockShift(os.Getenv(agent.ClockShiftEnv), index)
			if err != nil {
				return err
			}
			token, targets, err := agentSecrets(tokenFile, allow, insecure)
			if err != nil {
				return err
			}
			var tlsCfg *tls.Config
			if tlsFiles.Set() {
				tlsFiles.Labels = [3]string{"--tls-ca", "--tls-cert", "--tls-key"}
				if tlsCfg, err = tlsFiles.Server(); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			errw := cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return agent.Serve(ctx, agent.ServeOptions{
				Listen: listen, Index: index, Version: version, Idle: idle, Linger: linger, ClockShift: shift,
				Token: token, Insecure: insecure, Targets: targets, TLS: tlsCfg,
				Ready: func(a string) { fmt.Fprintf(out, "agent listening on %s\n", a) },
				Logf: func(format string, args ...any) {
					fmt.Fprintf(errw, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
				},
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	f.IntVar(&index, "index", 0, "the agent's position in its group (0-based), for its log and messages")
	f.Var(units.NewDurationFlag(&idle, 60*time.Second), "idle", "exit after this long without a controller")
	f.BoolVar(&linger, "linger", false, "when the controller stops the agent, cancel the load but keep running until SIGTERM or --idle")
	f.StringVar(&tokenFile, "token-file", "", "file holding the run's token, mode 0600 (default $"+agent.TokenFileEnv+", else the token in $"+agent.TokenEnv+")")
	f.StringArrayVar(&allow, "allow-target", nil, "a target URL the agent may load (repeatable; default $"+agent.TargetsEnv+", URLs separated by newlines or spaces)")
	f.StringVar(&tlsFiles.CA, "tls-ca", "", "mutual TLS: the CA (PEM) whose certificates clients must present; with --tls-cert and --tls-key the agent serves HTTPS only")
	f.StringVar(&tlsFiles.Cert, "tls-cert", "", "mutual TLS: the agent's certificate (PEM), signed by --tls-ca")
	f.StringVar(&tlsFiles.Key, "tls-key", "", "mutual TLS: the agent's private key (PEM)")
	f.BoolVar(&insecure, "insecure", false, "serve without a token: anyone who reaches the port commands the agent (local experiments only)")
	return cmd
}

// agentSecrets reads the agent's token (the --token-file flag, else the
// file $BENCHFLOW_AGENT_TOKEN_FILE names, else $BENCHFLOW_AGENT_TOKEN,
// which is then removed from the environment) and its allowed targets
// (the flags, else $BENCHFLOW_AGENT_TARGETS).
func agentSecrets(tokenFile string, allow []string, insecure bool) (string, []string, error) {
	from := "--token-file"
	if tokenFile == "" {
		tokenFile, from = os.Getenv(agent.TokenFileEnv), "$"+agent.TokenFileEnv
	}
	token := ""
	switch {
	case tokenFile != "":
		t, err := agent.ReadTokenFile(tokenFile)
		if err != nil {
			return "", nil, fmt.Errorf("%s %w", from, err)
		}
		token = t
	case os.Getenv(agent.TokenEnv) != "":
		token = strings.TrimSpace(os.Getenv(agent.TokenEnv))
	case !insecure:
		return "", nil, fmt.Errorf("no token: give --token-file (a file only you may read) or $%s, or --insecure for a local experiment (see benchflow agent --help)", agent.TokenEnv)
	}
	_ = os.Unsetenv(agent.TokenEnv)
	if insecure && token != "" {
		return "", nil, errors.New("--insecure with a token: give one or the other")
	}
	targets := allow
	if len(targets) == 0 {
		var err error
		if targets, err = agent.DecodeTargets(os.Getenv(agent.TargetsEnv)); err != nil {
			return "", nil, err
		}
	}
	if len(targets) == 0 {
		return "", nil, fmt.Errorf("no target: give --allow-target URL (repeatable) or $%s: an agent loads only the targets it is started with", agent.TargetsEnv)
	}
	return token, targets, nil
}
