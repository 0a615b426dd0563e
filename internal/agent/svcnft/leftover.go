package svcnft

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"

	"sigs.k8s.io/knftables"
)

// LeftOvers are the names of the kernel's ip tables, other than own,
// whose objects are exactly a Services table's (IsServicesTable): tables
// an agent run with another --service-interface left. Whether one is
// still in use (its agent runs) is the caller's to judge.
func LeftOvers(ctx context.Context, own string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "nft", "--json", "list", "tables", "ip").Output()
	if err != nil {
		return nil, fmt.Errorf("nftables: listing the ip tables: %w", err)
	}
	names, err := tableNames(out)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, name := range names {
		if name == own {
			continue
		}
		ok, err := HasServicesTable(ctx, name)
		if err != nil {
			return found, err
		}
		if ok {
			found = append(found, name)
		}
	}
	return found, nil
}

// HasServicesTable says whether the kernel's table ip name is there and
// a Services table (IsServicesTable).
func HasServicesTable(ctx context.Context, name string) (bool, error) {
	nft, err := knftables.New(knftables.IPv4Family, name)
	if err != nil {
		return false, fmt.Errorf("nftables table ip %s: %w", name, err)
	}
	objs, err := nft.ListAll(ctx)
	if err != nil {
		if knftables.IsNotFound(err) {
			return false, nil // gone meanwhile
		}
		return false, fmt.Errorf("nftables table ip %s: %w", name, err)
	}
	return IsServicesTable(objs), nil
}

// tableNames reads `nft --json list tables ip`.
func tableNames(out []byte) ([]string, error) {
	var doc struct {
		Nftables []struct {
			Table *struct {
				Family string `json:"family"`
				Name   string `json:"name"`
			} `json:"table"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("nftables: reading the list of tables: %w", err)
	}
	var names []string
	for _, o := range doc.Nftables {
		if o.Table != nil && o.Table.Family == "ip" {
			names = append(names, o.Table.Name)
		}
	}
	return names, nil
}

// IsServicesTable says whether a table's objects (knftables' ListAll:
// names by type) are exactly those Fill makes: its sets, its map and its
// chains, nothing else named.
func IsServicesTable(objs map[string][]string) bool {
	want := map[string][]string{
		"set": {setGuarded, setPods},
		"map": {mapRedirects},
	}
	for _, c := range chains {
		want["chain"] = append(want["chain"], c.name)
	}
	for typ, names := range objs {
		if typ == "table" || typ == "rule" {
			continue
		}
		got := slices.Sorted(slices.Values(names))
		w := slices.Sorted(slices.Values(want[typ]))
		if !slices.Equal(got, w) {
			return false
		}
	}
	for typ := range want {
		if _, ok := objs[typ]; !ok {
			return false
		}
	}
	return true
}
