package network

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/knftables"
)

// MasqueradeNftables is DefaultNetwork.Masquerade when berth masquerades
// its default network's traffic to the outside with one node-wide
// nftables rule per subnet, made once at start, instead of the bridge
// plugin's ipMasq (a chain and three rules per pod, nine iptables
// processes at each ADD and six at each DEL).
const MasqueradeNftables = "nftables"

// masqueradeTimeout bounds one nft run.
const masqueradeTimeout = 30 * time.Second

// MasqueradeTable is the nftables table (family inet) that holds the
// masquerade rules of the default network named network.
func MasqueradeTable(network string) string { return "berth-nat-" + network }

// ensureMasquerade makes d's masquerade table hold exactly one rule per
// subnet, in one transaction: traffic from the subnet to anywhere but the
// subnet and multicast leaves with the host's address, as the bridge
// plugin's ipMasq would do per pod. It is idempotent, and replaces rules a
// subnet change made stale.
func ensureMasquerade(ctx context.Context, d DefaultNetwork) error {
	subnets, err := parseSubnets(d.Subnet)
	if err != nil {
		return err
	}
	nft, err := knftables.New(knftables.InetFamily, MasqueradeTable(d.Name))
	if err != nil {
		return fmt.Errorf("nftables table inet %s: %w", MasqueradeTable(d.Name), err)
	}
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("berth: source NAT of network " + d.Name + " to the outside")})
	tx.Flush(&knftables.Table{})
	tx.Add(&knftables.Chain{
		Name:     "postrouting",
		Type:     knftables.PtrTo(knftables.NATType),
		Hook:     knftables.PtrTo(knftables.PostroutingHook),
		Priority: knftables.PtrTo(knftables.SNATPriority),
	})
	for _, n := range subnets {
		family, multicast := "ip", "224.0.0.0/4"
		if n.IP.To4() == nil {
			family, multicast = "ip6", "ff00::/8"
		}
		tx.Add(&knftables.Rule{
			Chain: "postrouting",
			Rule: knftables.Concat(family, "saddr", n.String(), family, "daddr !=", n.String(),
				family, "daddr !=", multicast, "masquerade"),
		})
	}
	ctx, cancel := context.WithTimeout(ctx, masqueradeTimeout)
	defer cancel()
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("nftables table inet %s: %w", MasqueradeTable(d.Name), err)
	}
	return nil
}

// RemoveMasquerade deletes the masquerade table of the default network
// named network; a missing table is not an error.
func RemoveMasquerade(ctx context.Context, network string) error {
	nft, err := knftables.New(knftables.InetFamily, MasqueradeTable(network))
	if err != nil {
		return fmt.Errorf("nftables table inet %s: %w", MasqueradeTable(network), err)
	}
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	ctx, cancel := context.WithTimeout(ctx, masqueradeTimeout)
	defer cancel()
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("nftables table inet %s: %w", MasqueradeTable(network), err)
	}
	return nil
}
