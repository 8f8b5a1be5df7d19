// gohello: the Go net/http peer of goro-hello for side-by-side load tests
// (loadtest/run.sh, loadtest/http/bench.py). Same routes and bodies for /plaintext and /json;
// prints the bound address on its first line like goro-hello. With -tls-cert
// and -tls-key it serves HTTPS (ServeTLS: TLS 1.2-1.3, Go's default ciphers,
// curves and session tickets), HTTP/1.1 only as goro-hello and the nginx peer.
//
//	go build -o gohello . && ./gohello -addr 127.0.0.1:8081 [-tls-cert C -tls-key K]
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	tlsCert := flag.String("tls-cert", "", "HTTPS: certificate chain PEM file (with -tls-key)")
	tlsKey := flag.String("tls-key", "", "HTTPS: private key PEM file (with -tls-cert)")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/plaintext", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("Hello, World!"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"message": "Hello, World!"})
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	os.Stdout.Sync()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	if *tlsCert != "" || *tlsKey != "" {
		// Go 1.19's server default floor is TLS 1.0; the peers' is 1.2. An
		// empty TLSNextProto keeps HTTP/2 out of ALPN.
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		log.Fatal(srv.ServeTLS(ln, *tlsCert, *tlsKey))
	}
	log.Fatal(srv.Serve(ln))
}
