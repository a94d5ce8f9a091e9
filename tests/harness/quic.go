package harness

import (
	"context"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
)

// QUICEnv turns [quic] on at a free loopback port with a self-signed
// certificate (the bound address is QUICAddr).
var QUICEnv = []string{"IGGY_QUIC_ENABLED=true", "IGGY_QUIC_ADDRESS=127.0.0.1:0"}

// QUICClient connects a logged-in client over QUIC (closed when the test
// ends); the server must run with QUICEnv.
func (s *Server) QUICClient(t testing.TB, username, password string) *client.Client {
	t.Helper()
	if s.QUICAddr == "" {
		t.Fatal("harness: the server serves no QUIC (start it with QUICEnv)")
	}
	cfg := s.ClientConfig(username, password)
	cfg.Transport, cfg.Addresses = client.TransportQUIC, []string{s.QUICAddr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("harness: connecting over quic to %s: %v", s.QUICAddr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// RootQUIC connects as iggy/iggy over QUIC.
func (s *Server) RootQUIC(t testing.TB) *client.Client { return s.QUICClient(t, "iggy", "iggy") }
