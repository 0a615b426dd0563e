package plan

import (
	"reflect"
	"testing"
)

func TestStopOrder(t *testing.T) {
	pod := newPod(always, inits(side("proxy"), ctr("setup"), side("metrics")), ctr("app"), ctr("log"))
	obs := observed(sandboxes(sb("sb0", 0, true)),
		running("c-metrics", "sb0", "metrics", 0, 2),
		running("c-log", "sb0", "log", 0, 3),
		exited("c-setup", "sb0", "setup", 0, 0, 1),
		running("c-proxy", "sb0", "proxy", 0, 1),
		created("c-app", "sb0", "app", 0, 3),
		exited("c-app-old", "sb0", "app", 1, 0, 2),
		running("c-stray", "sb0", "stray", 0, 3),
	)
	var got [][]string
	for _, group := range StopOrder(pod, obs) {
		var ids []string
		for _, c := range group {
			ids = append(ids, c.ID)
		}
		got = append(got, ids)
	}
	want := [][]string{{"c-app", "c-log", "c-stray"}, {"c-metrics"}, {"c-proxy"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestStopOrderNothingLive(t *testing.T) {
	pod := newPod(always, inits(side("proxy")), ctr("app"))
	obs := observed(sandboxes(sb("sb0", 0, false)), exited("c-app", "sb0", "app", 0, 0, 1))
	if got := StopOrder(pod, obs); len(got) != 0 {
		t.Errorf("got %v, want no groups", got)
	}
}
