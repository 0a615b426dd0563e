package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// twoTemplateSet is dbStatefulSet with two replicas, a second claim
// template (logs) and whenDeleted policy: claims data-db-0, data-db-1,
// logs-db-0 and logs-db-1.
func twoTemplateSet(policy string) string {
	return strings.Replace(dbStatefulSet, "replicas: 3", "replicas: 2\n  persistentVolumeClaimRetentionPolicy: {whenDeleted: "+policy+"}", 1) +
		"  - metadata: {name: logs}\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Mi}}\n"
}

// A StatefulSet applied again while its old copy terminates adopts only
// the claims its own pods use (its templates × its ordinals); the old
// copy's other claims follow the old copy's whenDeleted: kept under
// Retain (and not released when the new set, whenDeleted Delete, is
// deleted), deleted under Delete.
func TestStatefulSetAppliedAgainAdoptsOnlyTheClaimsItUses(t *testing.T) {
	for _, tc := range []struct {
		oldPolicy  string
		othersKept bool
	}{{"Retain", true}, {"Delete", false}} {
		t.Run("old whenDeleted "+tc.oldPolicy, func(t *testing.T) {
			a := startTestAgent(t, criclienttest.New())
			a.apply(t, twoTemplateSet(tc.oldPolicy))
			waitFor(t, "db-0 and db-1 ready", func() bool { return readyCount(a.ownedPods("StatefulSet")) == 2 })
			a.mu.Lock() // the old copy cannot finish before the new one is there
			old := a.liveWorkloadLocked("StatefulSet", "default", "db")
			_, err := a.deleteWorkloadLocked(old, nil)
			if err == nil {
				b := bundle(t, keptStatefulSet) // one replica, template data, whenDeleted Delete
				b.SetDefaults()
				_, err = a.applyObjectsLocked(b, "")
			}
			a.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the old copy forgotten", func() bool { return !a.hasWorkload(old.uid()) })
			newUID := string(a.statefulSet(t).StatefulSet.UID)
			others := []string{"data-db-1", "logs-db-0", "logs-db-1"}
			if c, _, _ := a.claims.store.Get("default", "data-db-0"); c.Owner != newUID {
				t.Errorf("data-db-0's owner %q; want the new set %q, whose db-0 uses it", c.Owner, newUID)
			}
			for _, name := range others {
				c, found, _ := a.claims.store.Get("default", name)
				switch {
				case c.Owner == newUID:
					t.Errorf("%s handed to the new set, which never uses it", name)
				case tc.othersKept && (!found || c.Deleting != nil):
					t.Errorf("%s: found %v, deleting %v; want it kept, as the old copy's whenDeleted Retain says", name, found, c.Deleting)
				case !tc.othersKept && found && c.Deleting == nil:
					t.Errorf("%s kept; want it deleted, as the old copy's whenDeleted Delete says", name)
				}
			}
			if _, err := a.DeleteWorkload(context.Background(), agentapi.ResourceStatefulSet, "default", "db", nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "data-db-0 released with the new set", func() bool { _, found := a.claimList(t)["data-db-0"]; return !found })
			for _, name := range others {
				c, found, _ := a.claims.store.Get("default", name)
				if tc.othersKept && (!found || c.Deleting != nil) {
					t.Errorf("%s after the new set's deletion: found %v, deleting %v; want it kept (the old copy's Retain)", name, found, c.Deleting)
				}
			}
		})
	}
}
