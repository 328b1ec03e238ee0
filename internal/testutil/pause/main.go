// Command pause is the pod sandbox process of the tests: it waits for
// SIGTERM or SIGINT and reaps its children meanwhile. Nothing can be pulled
// here, so the tests build it and import it as the sandbox image.
//
// "pause exit N" exits N at once instead: a canary container.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "exit" {
		code, _ := strconv.Atoi(os.Args[2])
		fmt.Printf("pause: exit %d\n", code)
		os.Exit(code)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
