package pod

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/store"
)

var (
	sandboxStates   = map[SandboxState]bool{SandboxCreating: true, SandboxReady: true, SandboxNotReady: true, SandboxRemoving: true}
	containerStates = map[ContainerState]bool{ContainerCreating: true, ContainerCreated: true, ContainerRunning: true, ContainerExited: true, ContainerRemoving: true}
)

// readSandboxRecord loads the sandbox record at path, kept in the directory
// named id, and checks it (checkSandbox).
func readSandboxRecord(path, id string, rec *Sandbox) error {
	if err := store.LoadVersionedJSON(path, rec, recordVersion); err != nil {
		return err
	}
	if err := checkSandbox(id, rec); err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	return nil
}

// readContainerRecord loads the container record at path, kept in the
// directory named id, and checks it (checkContainer).
func readContainerRecord(path, id string, rec *Container) error {
	if err := store.LoadVersionedJSON(path, rec, recordVersion); err != nil {
		return err
	}
	if err := checkContainer(id, rec); err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	return nil
}

// checkSandbox validates a decoded sandbox record kept in the directory named
// id, and decodes its config. Recovery acts on what a record says (CNI DEL,
// kills, removals), so a record that fails here is quarantined, not used.
func checkSandbox(id string, rec *Sandbox) error {
	if err := checkIDs(id, rec.ID); err != nil {
		return err
	}
	if !sandboxStates[rec.State] {
		return fmt.Errorf("field state: unknown state %q", rec.State)
	}
	if rec.Name == "" {
		return fmt.Errorf("field name: empty")
	}
	rec.Config = &runtimeapi.PodSandboxConfig{}
	if err := decodeConfig(rec.RawConfig, rec.Config); err != nil {
		return fmt.Errorf("field config: %w", err)
	}
	return nil
}

// checkContainer validates a decoded container record kept in the directory
// named id, and decodes its config.
func checkContainer(id string, rec *Container) error {
	if err := checkIDs(id, rec.ID); err != nil {
		return err
	}
	if !validID(rec.SandboxID) {
		return fmt.Errorf("field sandboxId: %q is not a berth id", rec.SandboxID)
	}
	if !containerStates[rec.State] {
		return fmt.Errorf("field state: unknown state %q", rec.State)
	}
	if rec.Name == "" {
		return fmt.Errorf("field name: empty")
	}
	if rec.Version == 1 {
		raw, err := migrateContainerConfigV1(rec.RawConfig)
		if err != nil {
			return fmt.Errorf("field config: %w", err)
		}
		rec.RawConfig = raw
	}
	rec.Config = &runtimeapi.ContainerConfig{}
	if err := decodeConfig(rec.RawConfig, rec.Config); err != nil {
		return fmt.Errorf("field config: %w", err)
	}
	return nil
}

func checkIDs(dirName, recID string) error {
	if !validID(dirName) {
		return fmt.Errorf("directory name %q is not a berth id", dirName)
	}
	if recID != dirName {
		return fmt.Errorf("field id: %q does not match its directory %q", recID, dirName)
	}
	return nil
}

// validID reports whether id has the shape of the ids berth generates.
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
