// Command iggo-healthcheck is the image's health check: it GETs a URL of
// the node's HTTP API (default http://127.0.0.1:3000/readyz) and exits 0
// on 200, 1 otherwise. The image has no shell and no curl, so the check
// is a binary of its own.
//
//	iggo-healthcheck [URL]
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	url := "http://127.0.0.1:3000/readyz"
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "iggo-healthcheck:", err)
		os.Exit(1)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "iggo-healthcheck:", url, resp.Status)
		os.Exit(1)
	}
}
