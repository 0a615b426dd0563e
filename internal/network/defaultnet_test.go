package network

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// pluginTypes lists the types of a list's plugins, in order.
func pluginTypes(list *libcni.NetworkConfigList) []string {
	var out []string
	for _, p := range list.Plugins {
		out = append(out, p.Network.Type)
	}
	return out
}

func TestForPodSkipsPortmapOnlyOnBerthsNetworkWithoutHostPorts(t *testing.T) {
	root := t.TempDir()
	data, err := defaultConfig(testDefault(root))
	if err != nil {
		t.Fatal(err)
	}
	own, err := libcni.NetworkConfFromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	got := forPod(own, nil)
	if types := pluginTypes(got); strings.Join(types, ",") != "bridge" {
		t.Errorf("berth's network, no host ports: plugins %v, want [bridge]", types)
	}
	if _, isOwn, _ := parseDefault(got.Bytes); !isOwn || got.Name != own.Name {
		t.Errorf("reduced list lost its name or marker: %s", got.Bytes)
	}
	mappings := []map[string]any{{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}}
	if types := pluginTypes(forPod(own, mappings)); strings.Join(types, ",") != "bridge,portmap" {
		t.Errorf("berth's network, a host port: plugins %v, want [bridge portmap]", types)
	}
	admin, err := libcni.NetworkConfFromBytes([]byte(`{"cniVersion":"1.0.0","name":"admin","plugins":[{"type":"bridge"},{"type":"portmap","capabilities":{"portMappings":true}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := forPod(admin, nil); got != admin {
		t.Errorf("an admin's list was changed: %s", got.Bytes)
	}
}

func TestDefaultConfigMasqueradeModes(t *testing.T) {
	for mode, wantIPMasq := range map[string]bool{"": true, MasqueradeNftables: false} {
		d := testDefault(t.TempDir())
		d.Masquerade = mode
		data, err := defaultConfig(d)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Plugins []struct{ IPMasq bool } }
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Plugins[0].IPMasq != wantIPMasq {
			t.Errorf("masquerade %q: bridge ipMasq = %v, want %v", mode, doc.Plugins[0].IPMasq, wantIPMasq)
		}
	}
	d := testDefault(t.TempDir())
	d.Masquerade = "iptables"
	if err := d.validate(); err == nil {
		t.Error("masquerade \"iptables\" accepted")
	}
}

// nftTable prints a table, or "" when it does not exist.
func nftTable(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "table", "inet", name).CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

func TestPrepareDefaultProgramsOneMasqueradeForTheNode(t *testing.T) {
	tn := newTestNet(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft")
	}
	table := MasqueradeTable(tn.def.Name)
	t.Cleanup(func() {
		if err := RemoveMasquerade(context.Background(), tn.def.Name); err != nil {
			t.Error(err)
		}
		if nftTable(t, table) != "" {
			t.Errorf("table %s left after RemoveMasquerade", table)
		}
	})
	own, err := PrepareDefault(context.Background(), tn.confDir)
	if err != nil || !own {
		t.Fatalf("PrepareDefault = %v, %v", own, err)
	}
	rules := nftTable(t, table)
	want := "ip saddr " + tn.subnet.String() + " ip daddr != " + tn.subnet.String() + " ip daddr != 224.0.0.0/4 masquerade"
	if !strings.Contains(rules, want) || strings.Count(rules, "masquerade") != 1 {
		t.Fatalf("table %s:\n%s\nwant one rule %q", table, rules, want)
	}
	d, _, err := readDefault(filepath.Join(tn.confDir, DefaultConfigFile))
	if err != nil || d.Masquerade != MasqueradeNftables {
		t.Fatalf("config after PrepareDefault: %+v, %v", d, err)
	}
	// Again: idempotent, still one rule.
	if _, err := PrepareDefault(context.Background(), tn.confDir); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(nftTable(t, table), "masquerade"); n != 1 {
		t.Errorf("%d masquerade rules after a second PrepareDefault, want 1", n)
	}

	// A pod on it gets no iptables rule and no portmap, and lo is up.
	before := iptablesSave(t)
	a, _ := tn.newPod(t)
	tn.setupPod(t, a)
	if chains := podChains(before, iptablesSave(t), a.PodID); len(chains) > 0 {
		t.Errorf("per-pod iptables chains with the node-wide masquerade: %v", chains)
	}
	cached, err := tn.cni.lib.GetCachedAttachments(a.PodID)
	if err != nil || len(cached) != 1 {
		t.Fatalf("cached attachments = %d, %v; want the pod network only", len(cached), err)
	}
	if list, err := libcni.NetworkConfFromBytes(cached[0].Config); err != nil || strings.Join(pluginTypes(list), ",") != "bridge" {
		t.Errorf("cached list = %v, %v; want [bridge]", err, cached[0].Config)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := nsenterNet(ctx, a.NetnsPath, "/bin/busybox", "ping", "-c", "1", "-W", "3", "127.0.0.1").CombinedOutput(); err != nil {
		t.Errorf("ping lo in the pod: %v\n%s", err, out)
	}

	// Its DEL takes eth0 down and leaves the veth to the kernel: the
	// address is free at once, the veth goes with the namespace.
	ports := tn.bridgePorts(t)
	if err := tn.cni.Teardown(ctx, a); err != nil {
		t.Fatal(err)
	}
	if left, _ := tn.cni.lib.GetCachedAttachments(a.PodID); len(left) != 0 || len(tn.allocations(t)) != 0 {
		t.Errorf("after Teardown: %d cached attachments, allocations %v", len(left), tn.allocations(t))
	}
	out, err := nsenterNet(ctx, a.NetnsPath, "/bin/busybox", "ip", "-o", "link", "show", "eth0").CombinedOutput()
	if err != nil || strings.Contains(string(out), ",UP") {
		t.Errorf("eth0 after Teardown: %v %s; want it there and down", err, out)
	}
	if n := tn.bridgePorts(t); n != ports {
		t.Errorf("bridge ports %d after Teardown, want %d: the veth is the kernel's to delete, with the namespace", n, ports)
	}
	if err := UnpinOne(a.NetnsPath); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for tn.bridgePorts(t) == ports && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := tn.bridgePorts(t); n == ports {
		t.Errorf("the pod's veth still on the bridge 20s after its namespace was unpinned")
	}

	// A new pod CIDR moves the rule.
	if changed, err := UpdateDefaultSubnet(tn.confDir, "10.251.7.0/24"); err != nil || !changed {
		t.Fatalf("UpdateDefaultSubnet = %v, %v", changed, err)
	}
	if rules := nftTable(t, table); !strings.Contains(rules, "ip saddr 10.251.7.0/24 ") || strings.Contains(rules, tn.subnet.String()) {
		t.Errorf("table after the subnet change:\n%s", rules)
	}
}

func TestTeardownDeletesAnOlderBerthsLoopbackAttachment(t *testing.T) {
	tn := newTestNet(t)
	a, _ := tn.newPod(t)
	tn.setupPod(t, a)
	lo, err := libcni.NetworkConfFromBytes([]byte(`{"cniVersion":"1.0.0","name":"` + loopbackNetworkName + `","plugins":[{"type":"loopback"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tn.cni.lib.AddNetworkList(ctx, lo, runtimeConf(a, a.NetnsPath, loopbackIfName, nil)); err != nil {
		t.Fatal(err)
	}
	if cached, _ := tn.cni.lib.GetCachedAttachments(a.PodID); len(cached) != 2 {
		t.Fatalf("%d cached attachments, want the pod network and loopback", len(cached))
	}
	if err := tn.cni.Teardown(ctx, a); err != nil {
		t.Fatal(err)
	}
	if cached, _ := tn.cni.lib.GetCachedAttachments(a.PodID); len(cached) != 0 {
		t.Errorf("%d cached attachments left after Teardown", len(cached))
	}
}

// TestTeardownOfAPodFromBeforeTheBoot: after a reboot a pod's namespace and
// its iptables chains are gone, and an older bridge plugin's DEL fails on
// its own missing chain. For a pod set up before the boot, Teardown says
// so (ErrBeforeBoot), forgets the pod's cached attachments and has had the
// address released; for a pod of this boot the failure stays an error.
func TestTeardownOfAPodFromBeforeTheBoot(t *testing.T) {
	tn := newTestNet(t) // the plugin's per-pod ipMasq
	a, dir := tn.newPod(t)
	before := iptablesSave(t)
	tn.setupPod(t, a)
	chains := podChains(before, iptablesSave(t), a.PodID)
	if len(chains) == 0 {
		t.Fatal("no per-pod chains: nothing to lose in the reboot")
	}
	// The reboot: the namespace and the pod's rules go.
	if err := Unpin(dir); err != nil {
		t.Fatal(err)
	}
	script := "*nat\n"
	for _, l := range podLines(before, iptablesSave(t), a.PodID, chains) {
		if strings.HasPrefix(l, "-A POSTROUTING ") {
			script += "-D " + strings.TrimPrefix(l, "-A ") + "\n"
		}
	}
	for c := range chains {
		script += "-F " + c + "\n-X " + c + "\n"
	}
	restore := exec.Command("iptables-restore", "--noflush")
	restore.Stdin = strings.NewReader(script + "COMMIT\n")
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("iptables-restore: %v: %s\n%s", err, out, script)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.SetUpAt = time.Now()
	err := tn.cni.Teardown(ctx, a)
	if err == nil {
		t.Skip("this bridge plugin's DEL does not fail on its missing chain: nothing to work around")
	}
	if errors.Is(err, ErrBeforeBoot) {
		t.Fatalf("a pod of this boot: %v, want a plain error", err)
	}
	saved := bootTime
	t.Cleanup(func() { bootTime = saved })
	bootTime = func() time.Time { return a.SetUpAt.Add(time.Second) }
	if err := tn.cni.Teardown(ctx, a); !errors.Is(err, ErrBeforeBoot) {
		t.Fatalf("a pod from before the boot: %v, want ErrBeforeBoot", err)
	}
	if cached, _ := tn.cni.lib.GetCachedAttachments(a.PodID); len(cached) != 0 {
		t.Errorf("%d cached attachments left", len(cached))
	}
	if left := tn.allocations(t); len(left) != 0 {
		t.Errorf("addresses still allocated: %v", left)
	}
	if err := tn.cni.Teardown(ctx, a); err != nil {
		t.Errorf("Teardown again, nothing cached: %v", err)
	}
}
