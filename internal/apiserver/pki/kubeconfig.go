package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// KubeconfigName is the cluster, user and context name of the kubeconfig
// WriteKubeconfig writes.
const KubeconfigName = "berth"

// WriteKubeconfig writes to path (0600, whole or not at all) a kubeconfig
// that reaches server (https://host:port) as the admin of r. Its directory
// is made (0755, as /etc's) when missing. A file there that is not a
// kubeconfig is renamed aside (<path>.unreadable-<unix time>) and
// reported, not overwritten; a kubeconfig there is replaced, as k3s
// replaces its own. log may be nil.
func WriteKubeconfig(path, server string, r *Result, now time.Time, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if u, err := url.Parse(server); err != nil || u.Scheme != "https" || u.Host == "" || u.Path != "" {
		return fmt.Errorf("kubeconfig %s: server %q: not https://host:port: %w", path, server, errdefs.ErrInvalidArgument)
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("kubeconfig %q: not an absolute path: %w", path, errdefs.ErrInvalidArgument)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: r.ServerCA}
	cfg.AuthInfos[KubeconfigName] = &clientcmdapi.AuthInfo{ClientCertificateData: r.AdminCert, ClientKeyData: r.AdminKey}
	cfg.Contexts[KubeconfigName] = &clientcmdapi.Context{Cluster: KubeconfigName, AuthInfo: KubeconfigName, Namespace: "default"}
	cfg.CurrentContext = KubeconfigName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if err := setAsideForeign(path, now, log); err != nil {
		return err
	}
	return store.WriteFileAtomic(path, data, 0o600)
}

// setAsideForeign renames path aside when it is there and is not a
// kubeconfig: berth does not overwrite what it does not understand.
func setAsideForeign(path string, now time.Time, log *slog.Logger) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	why := "not a regular file"
	if info.Mode().IsRegular() {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		_, err = clientcmd.Load(data)
		if err == nil {
			return nil
		}
		why = err.Error()
	}
	to := path + ".unreadable-" + strconv.FormatInt(now.Unix(), 10)
	if err := os.Rename(path, to); err != nil {
		return fmt.Errorf("kubeconfig %s: set aside: %w", path, err)
	}
	log.Warn("kubeconfig: the file there is not a kubeconfig; it is set aside and a new one written", "file", path, "now", to, "why", why)
	return nil
}
