package eviction

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const mi = 1 << 20

func memObs(available int64) Observations {
	return Observations{SignalMemoryAvailable: {Available: available, Capacity: 1024 * mi}}
}

func TestHardThresholdActsAtOnceAndConditionOutlivesItForTheTransitionPeriod(t *testing.T) {
	m := NewManager(Config{Thresholds: Defaults(), PressureTransitionPeriod: time.Minute})
	t0 := time.Unix(1000, 0)
	if act := m.Update(memObs(500*mi), t0); len(act) != 0 || len(m.Conditions()) != 0 {
		t.Fatalf("plenty of memory: act %v, conditions %v", act, m.Conditions())
	}
	act := m.Update(memObs(50*mi), t0.Add(10*time.Second))
	if len(act) != 1 || act[0].Signal != SignalMemoryAvailable {
		t.Fatalf("below 100Mi: act %v, want memory.available", act)
	}
	if got := m.Conditions(); !reflect.DeepEqual(got, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
		t.Fatalf("conditions %v, want [MemoryPressure]", got)
	}
	if act := m.Update(memObs(500*mi), t0.Add(20*time.Second)); len(act) != 0 {
		t.Fatalf("recovered: act %v", act)
	}
	if got := m.Conditions(); len(got) != 1 {
		t.Fatalf("within the transition period: conditions %v, want MemoryPressure kept", got)
	}
	m.Update(memObs(500*mi), t0.Add(10*time.Second+time.Minute))
	if got := m.Conditions(); len(got) != 0 {
		t.Fatalf("after the transition period: conditions %v, want none", got)
	}
}

func TestSoftThresholdWaitsForItsGracePeriodButRaisesTheConditionAtOnce(t *testing.T) {
	soft := Threshold{Signal: SignalMemoryAvailable, Value: Value{Percentage: 0.5}, Soft: true, GracePeriod: 30 * time.Second}
	m := NewManager(Config{Thresholds: []Threshold{soft}})
	t0 := time.Unix(1000, 0)
	if act := m.Update(memObs(100*mi), t0); len(act) != 0 {
		t.Fatalf("grace period not over: act %v", act)
	}
	if len(m.Conditions()) != 1 {
		t.Fatal("a soft threshold met raises MemoryPressure at once")
	}
	if act := m.Update(memObs(100*mi), t0.Add(30*time.Second)); len(act) != 1 {
		t.Fatalf("grace period over: act %v, want the soft threshold", act)
	}
	// Back above the threshold for a moment: the grace period starts over.
	m.Update(memObs(900*mi), t0.Add(40*time.Second))
	if act := m.Update(memObs(100*mi), t0.Add(50*time.Second)); len(act) != 0 {
		t.Fatalf("met again: act %v, want a new grace period", act)
	}
}

func TestMinimumReclaimKeepsAnActingThresholdMetUntilPassed(t *testing.T) {
	th := Threshold{Signal: SignalMemoryAvailable, Value: Value{Percentage: 0.1}, MinReclaim: &Value{Percentage: 0.1}}
	m := NewManager(Config{Thresholds: []Threshold{th}})
	t0 := time.Unix(1000, 0)
	if act := m.Update(memObs(50*mi), t0); len(act) != 1 {
		t.Fatal("threshold not met")
	}
	// 150Mi is above 10% (102.4Mi) but below 10% + 10%: still acting.
	if act := m.Update(memObs(150*mi), t0.Add(time.Second)); len(act) != 1 {
		t.Fatal("minimum reclaim not enforced")
	}
	if act := m.Update(memObs(300*mi), t0.Add(2*time.Second)); len(act) != 0 {
		t.Fatal("resolved past the minimum reclaim, still acting")
	}
	if act := m.Update(memObs(150*mi), t0.Add(3*time.Second)); len(act) != 0 {
		t.Fatal("150Mi alone does not meet the 10% threshold")
	}
}

func TestMemoryIsActedOnFirstAndUnobservedSignalsAreNotMet(t *testing.T) {
	m := NewManager(Config{Thresholds: Defaults()})
	obs := Observations{
		SignalNodeFsAvailable:  {Available: 1, Capacity: 100},
		SignalMemoryAvailable:  {Available: 1, Capacity: 1024 * mi},
		SignalNodeFsInodesFree: {Available: 100, Capacity: 100},
	}
	act := m.Update(obs, time.Unix(1, 0))
	if len(act) != 2 || act[0].Signal != SignalMemoryAvailable || act[1].Signal != SignalNodeFsAvailable {
		t.Fatalf("act %v, want memory.available then nodefs.available", act)
	}
	want := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}
	if got := m.Conditions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("conditions %v, want %v", got, want)
	}
}

func TestEvictionGracePeriod(t *testing.T) {
	m := NewManager(Config{MaxPodGracePeriodSeconds: 20})
	pod := &v1.Pod{}
	long, short := int64(60), int64(5)
	if g := m.EvictionGracePeriod(Threshold{}, pod); g != 1 {
		t.Errorf("hard: %d, want kubelet's 1 s", g)
	}
	pod.Spec.TerminationGracePeriodSeconds = &long
	if g := m.EvictionGracePeriod(Threshold{Soft: true}, pod); g != 20 {
		t.Errorf("soft, pod asks 60: %d, want the cap 20", g)
	}
	pod.Spec.TerminationGracePeriodSeconds = &short
	if g := m.EvictionGracePeriod(Threshold{Soft: true}, pod); g != 5 {
		t.Errorf("soft, pod asks 5: %d", g)
	}
}
