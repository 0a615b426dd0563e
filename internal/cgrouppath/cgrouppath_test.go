package cgrouppath

import (
	"errors"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestExpandSlice(t *testing.T) {
	for _, tc := range []struct{ slice, want string }{
		{"kubepods.slice", "/kubepods.slice"},
		{"kubepods-besteffort.slice", "/kubepods.slice/kubepods-besteffort.slice"},
		{"kubepods-besteffort-pod123.slice", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod123.slice"},
		{"-.slice", "/"},
		{"berth.slice", "/berth.slice"},
		{"kubepods-pod1_2_3.slice", "/kubepods.slice/kubepods-pod1_2_3.slice"},
	} {
		got, err := ExpandSlice(tc.slice)
		if err != nil || got != tc.want {
			t.Errorf("ExpandSlice(%q) = %q, %v; want %q", tc.slice, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", ".slice", "kubepods", "kubepods.scope", "a/b.slice", "kubepods.slice/x.slice",
		"a--b.slice", "-a.slice", "a-.slice", "--.slice", "../x.slice"} {
		if got, err := ExpandSlice(bad); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("ExpandSlice(%q) = %q, %v; want ErrInvalidArgument", bad, got, err)
		}
	}
}

func TestSystemd(t *testing.T) {
	got, err := Systemd("kubepods-besteffort-pod1.slice", "berth", "abc")
	if err != nil || got != "kubepods-besteffort-pod1.slice:berth:abc" {
		t.Fatalf("Systemd = %q, %v", got, err)
	}
	for _, bad := range [][3]string{
		{"/kubepods", "berth", "abc"},
		{"kubepods.slice", "", "abc"},
		{"kubepods.slice", "be:rth", "abc"},
		{"kubepods.slice", "berth", "a/b"},
		{"kubepods.slice", "berth", ".."},
		{"kubepods.slice", "berth", ""},
	} {
		if got, err := Systemd(bad[0], bad[1], bad[2]); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("Systemd%q = %q, %v; want ErrInvalidArgument", bad, got, err)
		}
	}
}

func TestDir(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/berth/abc", "/berth/abc"},
		{"kubepods/pod1/abc", "/kubepods/pod1/abc"},
		{"/a/../../b", "/b"},
		{"kubepods-besteffort-pod1.slice:berth:abc", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/berth-abc.scope"},
		{"berth.slice:berth:abc", "/berth.slice/berth-abc.scope"},
		{"-.slice:berth:abc", "/berth-abc.scope"},
		{":runc:abc", "/system.slice/runc-abc.scope"},
		{"kubepods.slice:berth:kubepods-x.slice", "/kubepods.slice/kubepods-x.slice"},
	} {
		got, err := Dir(tc.path)
		if err != nil || got != tc.want {
			t.Errorf("Dir(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "a:b", "a.slice:b:c:d", "a/b.slice:berth:c", "a.slice:berth:../x", "a.slice:berth:",
		"a.slice:be/rth:c", "kubepods:berth:c"} {
		if got, err := Dir(bad); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("Dir(%q) = %q, %v; want ErrInvalidArgument", bad, got, err)
		}
	}
}

func TestSliceName(t *testing.T) {
	for _, tc := range []struct{ parent, want string }{
		{"kubepods-besteffort-pod1.slice", "kubepods-besteffort-pod1.slice"},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice", "kubepods-besteffort-pod1_2.slice"},
		{"/kubepods.slice/kubepods-pod1.slice", "kubepods-pod1.slice"},
		{"/kubepods.slice", "kubepods.slice"},
		{"-.slice", "-.slice"},
	} {
		got, err := SliceName(tc.parent)
		if err != nil || got != tc.want {
			t.Errorf("SliceName(%q) = %q, %v; want %q", tc.parent, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "/", "/-.slice", "/kubepods", "/kubepods/besteffort/pod1", "/a.slice/b.slice",
		"/kubepods-besteffort.slice", "/kubepods.slice/kubepods-besteffort-pod1.slice", "kubepods.slice/kubepods-x.slice",
		"/kubepods.slice//kubepods-x.slice", "/kubepods.slice/kubepods-x.slice/", "/../kubepods.slice", "/kubepods.slice/../kubepods-x.slice"} {
		if got, err := SliceName(bad); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("SliceName(%q) = %q, %v; want ErrInvalidArgument", bad, got, err)
		}
	}
}
