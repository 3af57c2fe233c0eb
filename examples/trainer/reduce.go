package main

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// The ports of the two levels, as the seed's JobSet declares them: 8471
// between the hosts of a slice (the ICI stand-in), 8080 between slices
// (the DCN stand-in, MEGASCALE_COORDINATOR_ADDRESS's port).
const (
	ICIPort = 8471
	DCNPort = 8080
)

// message is one step's vector, either way.
type message struct {
	Step int
	Vec  []float64
}

// peer is one connection with its codec.
type peer struct {
	conn net.Conn
	enc  *gob.Encoder
	dec  *gob.Decoder
}

func newPeer(c net.Conn) *peer { return &peer{conn: c, enc: gob.NewEncoder(c), dec: gob.NewDecoder(c)} }

func (p *peer) send(m message) error {
	_ = p.conn.SetWriteDeadline(time.Now().Add(stepTimeout))
	return p.enc.Encode(m)
}

func (p *peer) recv(step int) ([]float64, error) {
	_ = p.conn.SetReadDeadline(time.Now().Add(stepTimeout))
	var m message
	if err := p.dec.Decode(&m); err != nil {
		return nil, err
	}
	if m.Step != step {
		return nil, fmt.Errorf("peer %s is at step %d, this worker at %d: the workers did not start from the same checkpoint", p.conn.RemoteAddr(), m.Step, step)
	}
	return m.Vec, nil
}

// stepTimeout bounds a step's exchange: a peer silent that long is gone.
var stepTimeout = 60 * time.Second

// Reducer sums a vector over every worker of every slice in two levels, as
// multislice training does: within a slice, over its hosts to the slice's
// leader (its first host); across slices, between the leaders through the
// coordinator (slice 0's leader). Every worker gets the total.
type Reducer struct {
	env Env
	// up is the connection towards the leader (workers) or the
	// coordinator (leaders of slices > 0); nil for the coordinator.
	up *peer
	// workers are the slice's other hosts (leaders); leaders the other
	// slices' leaders (the coordinator).
	workers, leaders []*peer
}

// Connect sets up the reducer's connections, waiting up to wait for the
// peers (their pods start in any order; their names resolve once they
// exist).
func Connect(ctx context.Context, e Env, host func(name string, port int) string, wait time.Duration) (*Reducer, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	r := &Reducer{env: e}
	leader, coordinator := e.Worker == 0, e.Worker == 0 && e.Slice == 0
	var err error
	if leader {
		if r.workers, err = accept(ctx, host("", ICIPort), len(e.Hosts)-1); err != nil {
			return nil, fmt.Errorf("hosts of slice %d: %w", e.Slice, err)
		}
	}
	switch {
	case coordinator:
		if r.leaders, err = accept(ctx, host("", DCNPort), e.Slices-1); err != nil {
			return nil, fmt.Errorf("leaders of the other slices: %w", err)
		}
	case leader:
		r.up, err = dial(ctx, host(e.Coordinator, DCNPort))
	default:
		r.up, err = dial(ctx, host(e.Leader(), ICIPort))
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// hostPort is the program's way to address a peer: name:port.
func hostPort(name string, port int) string { return net.JoinHostPort(name, strconv.Itoa(port)) }

// accept takes n connections on addr, in the background of the dials.
func accept(ctx context.Context, addr string, n int) ([]*peer, error) {
	if n == 0 {
		return nil, nil
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	go func() { <-ctx.Done(); l.Close() }()
	var peers []*peer
	for len(peers) < n {
		c, err := l.Accept()
		if err != nil {
			return nil, fmt.Errorf("%d of %d connected on %s: %w", len(peers), n, addr, err)
		}
		peers = append(peers, newPeer(c))
	}
	return peers, nil
}

// dial connects to addr, retrying until ctx ends.
func dial(ctx context.Context, addr string) (*peer, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return newPeer(c), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to %s: %w", addr, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// AllReduce returns the sum of v over every worker, for step.
func (r *Reducer) AllReduce(step int, v []float64) ([]float64, error) {
	sum := append([]float64(nil), v...)
	add := func(peers []*peer) error {
		for _, p := range peers {
			w, err := p.recv(step)
			if err != nil {
				return err
			}
			if len(w) != len(sum) {
				return errors.New("a peer sent a vector of another size")
			}
			for i := range sum {
				sum[i] += w[i]
			}
		}
		return nil
	}
	send := func(peers []*peer, v []float64) error {
		for _, p := range peers {
			if err := p.send(message{Step: step, Vec: v}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add(r.workers); err != nil { // the slice's hosts (ICI)
		return nil, err
	}
	if err := add(r.leaders); err != nil { // the other slices (DCN)
		return nil, err
	}
	if r.up != nil {
		if err := r.up.send(message{Step: step, Vec: sum}); err != nil {
			return nil, err
		}
		total, err := r.up.recv(step)
		if err != nil {
			return nil, err
		}
		sum = total
	}
	if err := send(r.leaders, sum); err != nil {
		return nil, err
	}
	if err := send(r.workers, sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// Close ends every connection.
func (r *Reducer) Close() {
	for _, p := range append(append(r.workers, r.leaders...), r.up) {
		if p != nil {
			p.conn.Close()
		}
	}
}
