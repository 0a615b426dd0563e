package harness

import (
	"os/exec"
	"strings"
)

// NftTableExists says whether the nftables table "FAMILY NAME" is there
// (the agent's Services table is "ip <service interface>").
func NftTableExists(family, name string) bool {
	out, err := exec.Command("nft", "list", "tables", family).Output()
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "table "+family+" "+name {
			return true
		}
	}
	return false
}

// RemoveNftTable deletes the table; a test removes only a table named
// after its own service interface.
func RemoveNftTable(family, name string) error {
	return exec.Command("nft", "delete", "table", family, name).Run()
}
