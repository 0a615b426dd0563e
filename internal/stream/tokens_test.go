package stream

import (
	"fmt"
	"testing"
	"time"
)

func TestTokenCacheIsSingleUseAndExpires(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newTokenCache()
	c.now = func() time.Time { return now }
	req := streamRequest{kind: kindExec, containerID: "c1", cmd: []string{"true"}, stdout: true}
	if err := c.put("tok", req); err != nil {
		t.Fatal(err)
	}
	got, ok := c.take("tok")
	if !ok || got.containerID != "c1" || got.kind != kindExec {
		t.Fatalf("take = %+v, %v; want the request", got, ok)
	}
	if _, ok := c.take("tok"); ok {
		t.Error("a token was taken twice")
	}
	if _, ok := c.take("never"); ok {
		t.Error("an unknown token was taken")
	}
	if err := c.put("old", req); err != nil {
		t.Fatal(err)
	}
	now = now.Add(tokenTTL)
	if _, ok := c.take("old"); ok {
		t.Error("a token was taken once its TTL had passed")
	}
}

func TestTokenCacheIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newTokenCache()
	c.now = func() time.Time { return now }
	c.max = 3
	for i := range 3 {
		if err := c.put(fmt.Sprint(i), streamRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.put("one too many", streamRequest{}); err == nil {
		t.Error("a full cache took another token")
	}
	now = now.Add(tokenTTL + time.Second)
	if err := c.put("after expiry", streamRequest{}); err != nil {
		t.Errorf("expired tokens still count against the limit: %v", err)
	}
	if len(c.entries) != 1 {
		t.Errorf("%d entries after expiry, want 1", len(c.entries))
	}
}

func TestStreamPath(t *testing.T) {
	for _, tc := range []struct{ path, kind, token string }{
		{"/exec/abc", kindExec, "abc"},
		{"/attach/x-_y", kindAttach, "x-_y"},
		{"//exec//abc/", kindExec, "abc"},
		{"/./exec/abc", kindExec, "abc"},
		{"/portforward/abc", "", ""},
		{"/exec", "", ""},
		{"/exec/abc/more", "", ""},
		{"/", "", ""},
	} {
		kind, token, ok := streamPath(tc.path)
		if kind != tc.kind || token != tc.token || ok != (tc.kind != "") {
			t.Errorf("streamPath(%q) = %q, %q, %v", tc.path, kind, token, ok)
		}
	}
	if kind, token, err := tokenOf("http://127.0.0.1:1234/attach/tok"); err != nil || kind != kindAttach || token != "tok" {
		t.Errorf("tokenOf = %q, %q, %v", kind, token, err)
	}
	if _, _, err := tokenOf("http://127.0.0.1:1234/portforward/tok"); err == nil {
		t.Error("tokenOf took a port-forward URL")
	}
}
