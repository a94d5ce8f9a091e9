// Package httpclient is a small client of Iggy's HTTP API (as iggo serves
// it): login with a password or a personal access token, JSON requests
// with the bearer token, and Iggy's JSON message form for sends and polls.
// Tests and the bench use it; the CLI talks binary through package client.
package httpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Client calls one node's HTTP API.
type Client struct {
	// Base is the API's base URL ("http://127.0.0.1:3000").
	Base string
	// Token is the bearer token sent with every request (a JWT from Login
	// or a personal access token).
	Token string
	HTTP  *http.Client
}

// New returns a client of base using http.DefaultClient's transport.
func New(base string) *Client {
	return &Client{Base: strings.TrimRight(base, "/"), HTTP: &http.Client{}}
}

// Error is a non-2xx answer: the status and Iggy's error JSON.
type Error struct {
	Status int
	ID     uint32 `json:"id"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
	Body   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("http %d: %s (%d): %s", e.Status, e.Code, e.ID, e.Reason)
}

// Response is a raw answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends method path with body (JSON-encoded unless it is []byte or nil)
// and returns the raw answer; only transport failures are errors.
func (c *Client) Do(ctx context.Context, method, path string, body any) (Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return Response{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return Response{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Call is Do that turns a non-2xx answer into *Error and decodes a JSON
// answer into out (when out is not nil).
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
	r, err := c.Do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if r.Status < 200 || r.Status > 299 {
		e := &Error{Status: r.Status, Body: string(r.Body)}
		_ = json.Unmarshal(r.Body, e)
		return e
	}
	if out != nil && len(r.Body) > 0 {
		return json.Unmarshal(r.Body, out)
	}
	return nil
}

// Identity is the login answer.
type Identity struct {
	UserID      uint32 `json:"user_id"`
	AccessToken struct {
		Token  string `json:"token"`
		Expiry uint64 `json:"expiry"`
	} `json:"access_token"`
}

// Login logs in with a password and keeps the access token.
func (c *Client) Login(ctx context.Context, username, password string) (Identity, error) {
	var id Identity
	err := c.Call(ctx, http.MethodPost, "/users/login", map[string]string{"username": username, "password": password}, &id)
	if err == nil {
		c.Token = id.AccessToken.Token
	}
	return id, err
}

// LoginWithToken logs in with a personal access token and keeps the
// access token it returns.
func (c *Client) LoginWithToken(ctx context.Context, pat string) (Identity, error) {
	var id Identity
	err := c.Call(ctx, http.MethodPost, "/personal-access-tokens/login", map[string]string{"token": pat}, &id)
	if err == nil {
		c.Token = id.AccessToken.Token
	}
	return id, err
}

// HeaderField is one user-header key or value: its kind name and bytes.
type HeaderField struct {
	Kind  string `json:"kind"`
	Value []byte `json:"value"`
}

// Header is one user header.
type Header struct {
	Key   HeaderField `json:"key"`
	Value HeaderField `json:"value"`
}

// Message is one message to send (ID 0: the server mints one).
type Message struct {
	ID          string   `json:"id,omitempty"`
	Payload     []byte   `json:"payload"`
	UserHeaders []Header `json:"user_headers,omitempty"`
}

// Partitioning of a send.
type Partitioning struct {
	Kind  string `json:"kind"`
	Value []byte `json:"value"`
}

// Balanced lets the server pick the partition round robin.
func Balanced() Partitioning { return Partitioning{Kind: "balanced", Value: []byte{}} }

// PartitionID sends to one partition.
func PartitionID(id uint32) Partitioning {
	return Partitioning{Kind: "partition_id", Value: binary.LittleEndian.AppendUint32(nil, id)}
}

// MessagesKey sends to the partition the key hashes to.
func MessagesKey(key []byte) Partitioning { return Partitioning{Kind: "messages_key", Value: key} }

// Confirmation is one partition's base offset of a send.
type Confirmation struct {
	StreamID    uint32 `json:"stream_id"`
	TopicID     uint32 `json:"topic_id"`
	PartitionID uint32 `json:"partition_id"`
	BaseOffset  uint64 `json:"base_offset"`
}

// Send sends msgs and returns the confirmations and the Iggy-Durability
// header.
func (c *Client) Send(ctx context.Context, stream, topic string, p Partitioning, msgs []Message) ([]Confirmation, string, error) {
	r, err := c.Do(ctx, http.MethodPost, "/streams/"+stream+"/topics/"+topic+"/messages",
		struct {
			Partitioning Partitioning `json:"partitioning"`
			Messages     []Message    `json:"messages"`
		}{p, msgs})
	if err != nil {
		return nil, "", err
	}
	if r.Status != http.StatusCreated {
		e := &Error{Status: r.Status, Body: string(r.Body)}
		_ = json.Unmarshal(r.Body, e)
		return nil, "", e
	}
	var out struct {
		Confirmations []Confirmation `json:"confirmations"`
	}
	if err := json.Unmarshal(r.Body, &out); err != nil {
		return nil, "", err
	}
	return out.Confirmations, r.Header.Get("Iggy-Durability"), nil
}

// PolledMessage is one polled message.
type PolledMessage struct {
	Header struct {
		Checksum          uint64      `json:"checksum"`
		ID                json.Number `json:"id"`
		Offset            uint64      `json:"offset"`
		Timestamp         uint64      `json:"timestamp"`
		OriginTimestamp   uint64      `json:"origin_timestamp"`
		UserHeadersLength uint32      `json:"user_headers_length"`
		PayloadLength     uint32      `json:"payload_length"`
	} `json:"header"`
	Payload     []byte          `json:"payload"`
	UserHeaders json.RawMessage `json:"user_headers"`
}

// Polled is a poll answer.
type Polled struct {
	PartitionID   uint32          `json:"partition_id"`
	CurrentOffset uint64          `json:"current_offset"`
	Count         uint32          `json:"count"`
	Messages      []PolledMessage `json:"messages"`
}

// Poll polls a partition as consumer (kind: offset, timestamp, first,
// last, next).
func (c *Client) Poll(ctx context.Context, stream, topic string, consumer string, partition uint32, kind string, value uint64, count uint32, autoCommit bool) (Polled, error) {
	q := "?consumer_id=" + consumer + "&partition_id=" + strconv.FormatUint(uint64(partition), 10) + "&kind=" + kind +
		"&value=" + strconv.FormatUint(value, 10) + "&count=" + strconv.FormatUint(uint64(count), 10) +
		"&auto_commit=" + strconv.FormatBool(autoCommit)
	dec := func(b []byte, out *Polled) error {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		return d.Decode(out)
	}
	r, err := c.Do(ctx, http.MethodGet, "/streams/"+stream+"/topics/"+topic+"/messages"+q, nil)
	if err != nil {
		return Polled{}, err
	}
	if r.Status != http.StatusOK {
		e := &Error{Status: r.Status, Body: string(r.Body)}
		_ = json.Unmarshal(r.Body, e)
		return Polled{}, e
	}
	var p Polled
	return p, dec(r.Body, &p)
}

// B64 is standard base64 (the JSON form of bytes).
func B64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
