// Command service is the small service of the container healthcheck end-to-end test: an HTTP
// server with /health, a TCP listener, and a heartbeat file, each of which can be broken and
// fixed from inside the container with "service ctl ACTION" (the image has no shell).
//
//	service                 serve (PID 1 of the container)
//	service ctl break|fix   /health answers 503 / 200
//	service ctl port-close|port-open     stop / resume listening on :9090
//	service ctl file-stop|file-start     stop / resume touching /tmp/heartbeat every 200ms
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	httpAddr  = "127.0.0.1:8080"
	portAddr  = ":9090"
	heartbeat = "/tmp/heartbeat"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "ctl" {
		resp, err := http.Get("http://" + httpAddr + "/ctl/" + os.Args[2])
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Print(string(b))
		if resp.StatusCode != http.StatusOK {
			os.Exit(1)
		}
		return
	}
	serve()
}

func serve() {
	var broken, fileStopped atomic.Bool
	var mu sync.Mutex
	var port net.Listener
	openPort := func() error {
		mu.Lock()
		defer mu.Unlock()
		if port != nil {
			return nil
		}
		l, err := net.Listen("tcp", portAddr)
		if err != nil {
			return err
		}
		port = l
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return nil
	}
	closePort := func() {
		mu.Lock()
		defer mu.Unlock()
		if port != nil {
			port.Close()
			port = nil
		}
	}
	if err := openPort(); err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll("/tmp", 0o1777); err != nil {
		log.Fatal(err)
	}
	go func() {
		for range time.Tick(200 * time.Millisecond) {
			if !fileStopped.Load() {
				now := time.Now()
				if err := os.WriteFile(heartbeat, []byte(now.Format(time.RFC3339Nano)), 0o644); err != nil {
					log.Print(err)
				}
			}
		}
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "service broken", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/ctl/{action}", func(w http.ResponseWriter, r *http.Request) {
		switch a := r.PathValue("action"); a {
		case "break":
			broken.Store(true)
		case "fix":
			broken.Store(false)
		case "port-close":
			closePort()
		case "port-open":
			if err := openPort(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		case "file-stop":
			fileStopped.Store(true)
		case "file-start":
			fileStopped.Store(false)
		default:
			http.Error(w, "unknown action "+a, http.StatusNotFound)
			return
		}
		fmt.Fprintln(w, "done")
	})
	log.Printf("listening on %s and %s", httpAddr, portAddr)
	log.Fatal(http.ListenAndServe(httpAddr, mux))
}
