package nodepool

import (
	"strings"
	"testing"
	"time"
)

func TestMoveBy(t *testing.T) {
	me := occupant{JobSet: "ns/high", Priority: 1000}
	for _, tc := range []struct {
		name    string
		me      occupant
		free    int
		others  []occupant
		how     string
		blocked string
	}{
		{name: "a spare", me: me, free: 1, how: "1 free healthy pool(s) in group g"},
		{name: "hot-swap of the lowest priority below", me: me,
			others: []occupant{{JobSet: "ns/mid", Priority: 500}, {JobSet: "ns/low", Priority: 1}}, how: "hot-swap: ns/low (priority 1 < 1000)"},
		{name: "never an equal priority", me: me, others: []occupant{{JobSet: "ns/peer", Priority: 1000}}, blocked: "ns/high (priority 1000) cannot move: group g has no healthy free pool"},
		{name: "never one opted out", me: me, others: []occupant{{JobSet: "ns/low", Priority: 1, Protected: true}}, blocked: "cannot move"},
		{name: "not when it opted out itself", me: occupant{JobSet: "ns/high", Priority: 1000, Protected: true},
			others: []occupant{{JobSet: "ns/low", Priority: 1}}, blocked: "cannot move"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			how, blocked := moveBy(tc.me, tc.free, tc.others, "g")
			if how != tc.how || !strings.Contains(blocked, tc.blocked) || (tc.blocked == "") != (blocked == "") {
				t.Fatalf("moveBy = %q, %q; want %q, %q", how, blocked, tc.how, tc.blocked)
			}
		})
	}
}

func TestStartAt(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   string
		want time.Time
		err  string
	}{
		{at: "", want: now},
		{at: "10m", want: now.Add(10 * time.Minute)},
		{at: "2026-12-04T13:00:00Z", want: now.Add(time.Hour)},
		{at: "25h", err: "want a delay of 0 to 24h"},
		{at: "-1m", err: "want a delay of 0 to 24h"},
		{at: "2026-12-09T13:00:00Z", err: "at most 24h from now"},
		{at: "tomorrow", err: `--at "tomorrow": want an RFC 3339 time`},
	} {
		got, err := startAt(tc.at, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("startAt(%q) error %v, want %q", tc.at, err, tc.err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("startAt(%q) = %v, %v; want %v", tc.at, got, err, tc.want)
		}
	}
}
