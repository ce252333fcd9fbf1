// Command service is the small service of the container healthcheck end-to-end test: an HTTP
// server with /health, a TCP listener, and a heartbeat file, each of which can be broken and
// fixed from inside the container with "service ctl ACTION" (the image has no shell).
//
//	service                 serve (PID 1 of the container)
//	service ctl break|fix   /health answers 503 / 200
//	service ctl port-close|port-open     stop / resume listening on :9090
//	service ctl file-stop|file-start     stop / resume touching /tmp/heartbeat every 200ms
//	service ctl cut|whole   /health answers 200 with a body cut off / whole
//
// /health is served over HTTP on 127.0.0.1:8080 and over TLS on 127.0.0.1:8443, with a
// self-signed certificate for svc.example only (a service's certificate names its host, never
// the 127.0.0.1 a probe asks).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	httpAddr  = "127.0.0.1:8080"
	tlsAddr   = "127.0.0.1:8443"
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
	var broken, fileStopped, cut atomic.Bool
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
		if cut.Load() {
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok\n")
			c.Close()
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
		case "cut":
			cut.Store(true)
		case "whole":
			cut.Store(false)
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
	tlsSrv := &http.Server{Addr: tlsAddr, Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{selfSigned("svc.example")}}}
	go func() { log.Fatal(tlsSrv.ListenAndServeTLS("", "")) }()
	log.Printf("listening on %s, %s (TLS) and %s", httpAddr, tlsAddr, portAddr)
	log.Fatal(http.ListenAndServe(httpAddr, mux))
}

// selfSigned makes a certificate for name alone.
func selfSigned(name string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
