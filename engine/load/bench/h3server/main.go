// Command h3server serves two fixed bodies over HTTP/3 (quic-go's
// http3.Server) on a loopback UDP port, for engine/load/bench/compare-h3.sh
// on machines without an HTTP/3 web server: /6b is "hello\n" (6 bytes), as
// nginx serves it in compare-wrk.sh and compare-h2load.sh, and /64k is
// 65,536 bytes; any other path is a 404. Both bodies are in memory, written
// with their Content-Length in one Write; nothing is logged per request.
//
//	go run ./engine/load/bench/h3server -addr 127.0.0.1:8443 -write-cert /tmp/h3.pem
//
// Its certificate is self-signed, made at start (ECDSA P-256, for
// 127.0.0.1, ::1 and localhost, valid a day), unless -cert and -key name
// PEM files; -write-cert writes the certificate in use, for a client's CA
// file (h3floor -cacert, benchflow load --cacert). -t sets GOMAXPROCS (1 by
// default, as nginx's one worker in the other scripts). It serves until
// SIGINT or SIGTERM.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	addr := flag.String("addr", "", "UDP `HOST:PORT` to serve on (loopback only)")
	threads := flag.Int("t", 1, "threads (GOMAXPROCS)")
	certFile := flag.String("cert", "", "certificate `FILE` (PEM; with -key): default a self-signed one made at start")
	keyFile := flag.String("key", "", "private key `FILE` (PEM; with -cert)")
	writeCert := flag.String("write-cert", "", "write the certificate in use to `FILE` (PEM), for a client's CA file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: h3server -addr HOST:PORT [-t THREADS] [-cert FILE -key FILE] [-write-cert FILE]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := serve(*addr, *threads, *certFile, *keyFile, *writeCert, flag.NArg()); err != nil {
		fmt.Fprintln(os.Stderr, "h3server:", err)
		os.Exit(1)
	}
}

func serve(addr string, threads int, certFile, keyFile, writeCert string, args int) error {
	switch {
	case args != 0:
		return errors.New("no arguments expected (the address is -addr)")
	case threads < 1:
		return fmt.Errorf("-t %d: want at least 1 thread", threads)
	case (certFile == "") != (keyFile == ""):
		return errors.New("-cert and -key go together")
	}
	if err := loopback(addr); err != nil {
		return err
	}
	runtime.GOMAXPROCS(threads)
	var cert tls.Certificate
	var certPEM []byte
	var err error
	if certFile != "" {
		if cert, err = tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return fmt.Errorf("loading -cert and -key: %w", err)
		}
		if certPEM, err = os.ReadFile(certFile); err != nil {
			return err
		}
	} else if cert, certPEM, err = selfSigned(); err != nil {
		return fmt.Errorf("making a certificate: %w", err)
	}
	if writeCert != "" {
		if err := os.WriteFile(writeCert, certPEM, 0o644); err != nil {
			return fmt.Errorf("-write-cert: %w", err)
		}
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	srv := newServer(cert)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "h3server: serving https://%s/6b and /64k over HTTP/3 (UDP), GOMAXPROCS %d\n", pc.LocalAddr(), threads)
	err = srv.Serve(pc)
	if ctx.Err() != nil {
		return nil // stopped by a signal
	}
	return err
}

// loopback refuses an address that is not HOST:PORT on a loopback IP.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: want HOST:PORT", addr)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %s: %q is not a loopback address", addr, host)
	}
	return nil
}

func newServer(cert tls.Certificate) *http3.Server {
	return &http3.Server{
		Handler:   handler(),
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
	}
}

// body64k is 65,536 bytes that no compression would shrink much.
var body64k = func() []byte {
	b := make([]byte, 64<<10)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}()

func handler() http.Handler {
	bodies := map[string][]byte{"/6b": []byte("hello\n"), "/64k": body64k}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/octet-stream"}
		h["Content-Length"] = []string{strconv.Itoa(len(b))}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b)
	})
}

// selfSigned makes an ECDSA P-256 certificate for 127.0.0.1, ::1 and
// localhost, valid for a day, and returns it with its PEM.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, err
}
