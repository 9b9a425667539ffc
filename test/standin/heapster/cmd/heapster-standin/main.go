// Command heapster-standin serves the Heapster stand-in over HTTP, for the demo and for
// end-to-end runs that start it as a process behind a kube-system/heapster Service.
//
//	heapster-standin --listen 10.200.0.1:8082 --scenario scenario.json
//
// Besides Heapster's paths it serves /standin/scenario: GET returns the scenario, PUT
// replaces it (JSON, the format of --scenario), so a test can change the load.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "heapster-standin:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8082", "address to listen on (Heapster's container port is 8082)")
	scenarioFile := flag.String("scenario", "", "JSON scenario to serve at start (default: no pods)")
	flag.Parse()

	var sc heapsterstandin.Scenario
	if *scenarioFile != "" {
		data, err := os.ReadFile(*scenarioFile)
		if err != nil {
			return fmt.Errorf("reading scenario: %w", err)
		}
		if sc, err = heapsterstandin.ParseScenario(data); err != nil {
			return err
		}
	}
	srv, err := heapsterstandin.New(clock.RealClock{}, sc)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/standin/scenario", srv.ControlHandler())
	mux.Handle("/", srv)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "heapster-standin: serving on %s\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
