package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Exit codes of the reaper's own, beside the command's.
const (
	exitUsage    = 2   // a bad flag, no command, or no subreaper
	exitOutlived = 3   // processes outlived the command
	exitNoStart  = 127 // the command could not be started
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is the reaper with its arguments; it returns the reaper's exit code.
func run(args []string) int {
	fs := flag.NewFlagSet("reaper", flag.ContinueOnError)
	grace := fs.Duration("grace", 10*time.Second,
		"how long what outlived the command has to exit on SIGTERM before SIGKILL")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: reaper [-grace 10s] -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		warnf("become a child subreaper: %v", err)
		return exitUsage
	}
	return supervise(fs.Args(), *grace)
}

// supervise runs the command to its end, then ends what outlived it.
func supervise(argv []string, grace time.Duration) int {
	// Caught before the command starts: a SIGTERM that comes before it
	// is forwarded rather than ending the reaper alone.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	cmd, err := start(argv)
	if err != nil {
		warnf("%v", err)
		return exitNoStart
	}
	stop := make(chan struct{})
	go forward(sigs, cmd.Process, stop)
	code := waitFor(cmd.Process.Pid)
	close(stop)
	if n := endOutlived(argv[0], grace); n > 0 {
		warnf("%d processes outlived %s (which exited %d)", n, argv[0], code)
		return exitOutlived
	}
	return code
}

// start starts the command with the reaper's standard streams. The
// reaper never calls Wait: its own wait loop reaps the command.
func start(argv []string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return cmd, nil
}

// forward sends the signals the reaper receives to the command until
// stop is closed. (os.Process signals through a pidfd where there is
// one, so a reused pid is never signalled.)
func forward(sigs <-chan os.Signal, p *os.Process, stop <-chan struct{}) {
	for {
		select {
		case s := <-sigs:
			_ = p.Signal(s)
		case <-stop:
			return
		}
	}
}

func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "reaper: "+format+"\n", args...)
}
