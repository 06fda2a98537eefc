package main

import (
	"strings"
	"testing"

	"github.com/weir-stream/weir/host"
)

func TestStatusText(t *testing.T) {
	wm, lag := int64(1_700_000_000_000), int64(42) // wm is 22:13:20 UTC
	prev := host.Stats{Stages: []host.StageCounts{{Stage: "source", Out: 1000}, {Stage: "sink", Out: 900}}}
	cur := host.Stats{
		Stages:      []host.StageCounts{{Stage: "source", Out: 3500}, {Stage: "operator", In: 3500, Out: 3400, Dead: 2}, {Stage: "sink", Out: 3400}},
		DeadLetter:  2,
		ConsumerLag: &lag,
		Watermark:   &wm,
	}
	got := statusText("p", cur, prev, 1)
	for _, want := range []string{"p: in 2.5k/s out 2.5k/s", "lag 42", "wm 22:13:20", "errors 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("status %q lacks %q", got, want)
		}
	}
	if got := statusText("q", host.Stats{}, host.Stats{}, 1); got != "q: in 0/s out 0/s" {
		t.Errorf("idle status %q", got)
	}
	if got := statusText("s", host.Stats{State: host.StateStandby}, host.Stats{}, 1); !strings.HasPrefix(got, "s: standby") {
		t.Errorf("standby status %q", got)
	}
	restoring := host.Stats{State: host.StateRestoring, Restore: &host.RestoreStats{
		Tasks: make([]host.TaskRestore, 12), Replayed: 250_000, Left: 750_000, EtaSeconds: 6.2}}
	if got, want := statusText("r", restoring, host.Stats{}, 1),
		"r: restoring state from the changelog: 250000 records replayed, 750000 left over 12 tasks, about 6s to go"; got != want {
		t.Errorf("restoring status %q, want %q", got, want)
	}
	if got := statusText("t", host.Stats{Tasks: []int32{0, 5, 7}}, host.Stats{}, 1); got != "t: in 0/s out 0/s tasks 3" {
		t.Errorf("status of an instance sharing its group by task %q", got)
	}
	if isTerminal(&strings.Builder{}) {
		t.Error("a strings.Builder is not a terminal")
	}
}
