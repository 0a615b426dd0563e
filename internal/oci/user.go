package oci

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// userRequest is the user and group to run as, each a number, a name or "".
type userRequest struct {
	user, group string
	source      string // where it came from, for error messages
}

// resolveUser picks the process identity: the security context's
// run_as_user / run_as_username (+ run_as_group), else the image's User.
// Names resolve in the rootfs' /etc/passwd and /etc/group. The primary gid
// comes first in AdditionalGids, then (policy Merge) the groups listing the
// user in /etc/group, then the security context's supplemental_groups.
func resolveUser(rootfs string, sc *runtimeapi.LinuxContainerSecurityContext, imageUser string) (specs.User, error) {
	req, err := userRequestFor(sc, imageUser)
	if err != nil {
		return specs.User{}, err
	}
	db := &accounts{rootfs: rootfs}
	uid, gid, name, err := resolveIDs(db, req)
	if err != nil {
		return specs.User{}, fmt.Errorf("%s: %w", req.source, err)
	}
	gids := []uint32{gid}
	if sc.GetSupplementalGroupsPolicy() != runtimeapi.SupplementalGroupsPolicy_Strict && name != "" {
		member, err := db.memberships(name)
		if err != nil {
			return specs.User{}, fmt.Errorf("%s: groups of %q: %w", req.source, name, err)
		}
		gids = append(gids, member...)
	}
	for _, g := range sc.GetSupplementalGroups() {
		id, err := int64ID(g)
		if err != nil {
			return specs.User{}, fmt.Errorf("security context: supplemental_groups: %w", err)
		}
		gids = append(gids, id)
	}
	return specs.User{UID: uid, GID: gid, AdditionalGids: uniqueIDs(gids)}, nil
}

func userRequestFor(sc *runtimeapi.LinuxContainerSecurityContext, imageUser string) (userRequest, error) {
	const ctx = "security context"
	var req userRequest
	switch {
	case sc.GetRunAsUser() != nil && sc.GetRunAsUsername() != "":
		return req, fmt.Errorf("%s: run_as_user and run_as_username both set: %w", ctx, errdefs.ErrInvalidArgument)
	case sc.GetRunAsUser() != nil:
		if _, err := int64ID(sc.GetRunAsUser().GetValue()); err != nil {
			return req, fmt.Errorf("%s: run_as_user: %w", ctx, err)
		}
		req = userRequest{user: strconv.FormatInt(sc.GetRunAsUser().GetValue(), 10), source: ctx + " run_as_user"}
	case sc.GetRunAsUsername() != "":
		user, group, err := splitUserString(sc.GetRunAsUsername())
		if err != nil {
			return req, fmt.Errorf("%s: run_as_username: %w", ctx, err)
		}
		req = userRequest{user: user, group: group, source: ctx + " run_as_username"}
	case sc.GetRunAsGroup() != nil:
		return req, fmt.Errorf("%s: run_as_group set without run_as_user or run_as_username: %w", ctx, errdefs.ErrInvalidArgument)
	default:
		user, group, err := splitUserString(imageUser)
		if err != nil {
			return req, fmt.Errorf("image config: user: %w", err)
		}
		req = userRequest{user: user, group: group, source: fmt.Sprintf("image user %q", imageUser)}
	}
	if g := sc.GetRunAsGroup(); g != nil {
		if _, err := int64ID(g.GetValue()); err != nil {
			return req, fmt.Errorf("%s: run_as_group: %w", ctx, err)
		}
		req.group = strconv.FormatInt(g.GetValue(), 10)
	}
	return req, nil
}

// splitUserString splits "user", "user:group" (each a name or a number).
func splitUserString(s string) (user, group string, err error) {
	user, group, hasGroup := strings.Cut(s, ":")
	if strings.Contains(group, ":") || (hasGroup && (user == "" || group == "")) {
		return "", "", fmt.Errorf("%q: not user, uid, user:group or uid:gid: %w", s, errdefs.ErrInvalidArgument)
	}
	return user, group, nil
}

// resolveIDs turns the request into numbers; name is the passwd name of the
// user when known (it selects /etc/group memberships).
func resolveIDs(db *accounts, req userRequest) (uid, gid uint32, name string, err error) {
	var entry passwdEntry
	var known bool
	if isNumeric(req.user) || req.user == "" {
		if req.user != "" {
			if uid, err = parseID(req.user); err != nil {
				return 0, 0, "", err
			}
		}
		if entry, known, err = db.userByID(uid); err != nil {
			return 0, 0, "", err
		}
	} else {
		if entry, err = db.userByName(req.user); err != nil {
			return 0, 0, "", err
		}
		uid, known = entry.uid, true
	}
	if known {
		gid, name = entry.gid, entry.name
	}
	switch {
	case req.group == "":
	case isNumeric(req.group):
		if gid, err = parseID(req.group); err != nil {
			return 0, 0, "", err
		}
	default:
		group, err := db.groupByName(req.group)
		if err != nil {
			return 0, 0, "", err
		}
		gid = group.gid
	}
	return uid, gid, name, nil
}

func int64ID(v int64) (uint32, error) {
	if v < 0 || v >= 1<<32-1 {
		return 0, fmt.Errorf("id %d: outside [0, 4294967294]: %w", v, errdefs.ErrInvalidArgument)
	}
	return uint32(v), nil
}

func uniqueIDs(ids []uint32) []uint32 {
	seen := make(map[uint32]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
