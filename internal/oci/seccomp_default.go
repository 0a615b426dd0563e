package oci

import (
	"runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The RuntimeDefault seccomp profile is berth's own data, shaped like the
// profile Docker, containerd and CRI-O ship: everything not listed fails with
// EPERM; the list allows what ordinary programs use and leaves out calls that
// reach across the container boundary (kernel keyring, modules, clock,
// namespaces, mounts, BPF, perf, reboot, swap, quotas, ...). Calls that only a
// capability makes useful are allowed when the container holds it.

const errnoENOSYS uint = 38

// defaultAllowedSyscalls is the always-allowed set. Names unknown to an
// architecture (e.g. arch_prctl on arm64) are skipped by runc's libseccomp.
var defaultAllowedSyscalls = []string{
	// files and directories
	"access", "faccessat", "faccessat2", "chdir", "fchdir", "chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "chown32", "fchown", "fchown32", "fchownat", "lchown", "lchown32",
	"close", "close_range", "creat", "dup", "dup2", "dup3", "fcntl", "fcntl64",
	"fallocate", "fadvise64", "fadvise64_64", "arm_fadvise64_64", "flock", "fsync", "fdatasync",
	"sync", "syncfs", "sync_file_range", "sync_file_range2", "ftruncate", "ftruncate64", "truncate", "truncate64",
	"getcwd", "getdents", "getdents64", "readdir", "link", "linkat", "symlink", "symlinkat",
	"readlink", "readlinkat", "mkdir", "mkdirat", "mknod", "mknodat", "rename", "renameat", "renameat2",
	"rmdir", "unlink", "unlinkat", "open", "openat", "openat2", "lseek", "_llseek",
	"read", "readv", "pread64", "preadv", "preadv2", "write", "writev", "pwrite64", "pwritev", "pwritev2",
	"sendfile", "sendfile64", "splice", "tee", "vmsplice", "copy_file_range",
	"stat", "stat64", "fstat", "fstat64", "lstat", "lstat64", "newfstatat", "fstatat64", "statx",
	"statfs", "statfs64", "fstatfs", "fstatfs64", "ustat", "umask", "utime", "utimes", "utimensat",
	"utimensat_time64", "futimesat", "getxattr", "fgetxattr", "lgetxattr", "setxattr", "fsetxattr",
	"lsetxattr", "listxattr", "flistxattr", "llistxattr", "removexattr", "fremovexattr", "lremovexattr",
	"ioctl", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	"fanotify_mark", "memfd_create", "memfd_secret", "name_to_handle_at", "readahead", "cachestat",
	"getxattrat", "setxattrat", "listxattrat", "removexattrat",
	// async io (io_uring is left out, as containerd and Docker now do)
	"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
	"io_pgetevents_time64",
	// polling, events, pipes
	"select", "_newselect", "pselect6", "pselect6_time64", "poll", "ppoll", "ppoll_time64",
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_wait", "epoll_wait_old",
	"epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "pipe", "pipe2",
	"signalfd", "signalfd4", "timerfd_create", "timerfd_settime", "timerfd_settime64",
	"timerfd_gettime", "timerfd_gettime64",
	// memory
	"brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "pkey_mprotect", "pkey_alloc", "pkey_free",
	"madvise", "mincore", "mseal", "map_shadow_stack", "mlock", "mlock2", "mlockall", "munlock", "munlockall", "msync",
	"membarrier", "remap_file_pages", "process_mrelease",
	// processes, threads, signals
	"execve", "execveat", "exit", "exit_group", "fork", "vfork", "wait4", "waitid", "waitpid",
	"kill", "tkill", "tgkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
	"rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
	"rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_tgsigqueueinfo",
	"sigaction", "sigaltstack", "signal", "sigpending", "sigprocmask", "sigreturn", "sigsuspend",
	"pause", "alarm", "getitimer", "setitimer", "prctl", "arch_prctl", "set_thread_area",
	"get_thread_area", "set_tid_address", "set_robust_list", "get_robust_list", "rseq",
	"futex", "futex_time64", "futex_waitv", "futex_wait", "futex_wake", "futex_requeue",
	"sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getattr", "sched_setattr",
	"sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
	"sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
	"sched_rr_get_interval_time64", "getpriority", "setpriority", "ioprio_get", "ioprio_set",
	"getcpu", "capget", "capset", "restart_syscall", "seccomp", "landlock_create_ruleset",
	"landlock_add_rule", "landlock_restrict_self", "getrandom", "uname", "sysinfo",
	"getrlimit", "ugetrlimit", "setrlimit", "prlimit64", "getrusage", "times",
	// identity
	"getpid", "getppid", "gettid", "getpgid", "getpgrp", "setpgid", "getsid", "setsid",
	"getuid", "getuid32", "geteuid", "geteuid32", "getgid", "getgid32", "getegid", "getegid32",
	"getresuid", "getresuid32", "getresgid", "getresgid32", "getgroups", "getgroups32",
	"setuid", "setuid32", "setgid", "setgid32", "setreuid", "setreuid32", "setregid", "setregid32",
	"setresuid", "setresuid32", "setresgid", "setresgid32", "setgroups", "setgroups32",
	"setfsuid", "setfsuid32", "setfsgid", "setfsgid32",
	// time (reading clocks and sleeping only)
	"time", "gettimeofday", "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64",
	"clock_nanosleep", "clock_nanosleep_time64", "nanosleep", "timer_create", "timer_delete",
	"timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64",
	// sockets
	"socket", "socketpair", "socketcall", "bind", "connect", "listen", "accept", "accept4",
	"getsockname", "getpeername", "getsockopt", "setsockopt", "shutdown", "send", "sendto",
	"sendmsg", "sendmmsg", "recv", "recvfrom", "recvmsg", "recvmmsg", "recvmmsg_time64",
	// System V and POSIX IPC (namespaced)
	"ipc", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop",
	"semtimedop_time64", "semctl", "shmget", "shmat", "shmdt", "shmctl",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive",
	"mq_timedreceive_time64", "mq_notify", "mq_getsetattr",
	// 32-bit arm and x86 odds and ends
	"breakpoint", "cacheflush", "set_tls",
}

// capabilitySyscalls are allowed only when the container holds the
// capability: the capability check inside the kernel is then the guard.
var capabilitySyscalls = map[string][]string{
	"CAP_SYS_ADMIN": {"mount", "mount_setattr", "umount", "umount2", "move_mount", "open_tree",
		"fsopen", "fsconfig", "fsmount", "fspick", "pivot_root", "unshare", "setns", "clone3",
		"sethostname", "setdomainname", "quotactl", "quotactl_fd", "lookup_dcookie", "syslog",
		"bpf", "perf_event_open", "fanotify_init", "open_by_handle_at", "iopl", "ioperm",
		"vhangup", "swapon", "swapoff"},
	"CAP_SYS_PTRACE":      {"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "process_madvise"},
	"CAP_SYS_MODULE":      {"init_module", "finit_module", "delete_module"},
	"CAP_SYS_BOOT":        {"reboot", "kexec_load", "kexec_file_load"},
	"CAP_SYS_TIME":        {"settimeofday", "stime", "clock_settime", "clock_settime64", "adjtimex", "clock_adjtime", "clock_adjtime64"},
	"CAP_SYS_NICE":        {"get_mempolicy", "set_mempolicy", "set_mempolicy_home_node", "mbind", "migrate_pages", "move_pages"},
	"CAP_SYS_PACCT":       {"acct"},
	"CAP_SYS_CHROOT":      {"chroot"},
	"CAP_SYS_RAWIO":       {"iopl", "ioperm"},
	"CAP_SYS_TTY_CONFIG":  {"vhangup"},
	"CAP_SYSLOG":          {"syslog"},
	"CAP_BPF":             {"bpf"},
	"CAP_PERFMON":         {"perf_event_open"},
	"CAP_DAC_READ_SEARCH": {"open_by_handle_at"},
}

// namespaceCloneFlags are the clone(2) flags that create namespaces:
// CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET (0x7E020000).
const namespaceCloneFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

// allowedPersonalities are the personality(2) arguments a container may use:
// PER_LINUX, PER_LINUX32, UNAME26, their combination, and the query 0xffffffff.
var allowedPersonalities = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// RuntimeDefaultSeccomp is berth's RuntimeDefault profile for a container
// holding caps (its bounding set).
func RuntimeDefaultSeccomp(caps []string) *specs.LinuxSeccomp {
	// runc answers SCMP_ACT_ERRNO without an errno with EPERM; the field
	// defaultErrnoRet is left out for runc 1.1's spec version.
	profile := &specs.LinuxSeccomp{
		DefaultAction: specs.ActErrno,
		Architectures: nativeArchitectures(runtime.GOARCH),
		Syscalls: []specs.LinuxSyscall{
			{Names: append([]string(nil), defaultAllowedSyscalls...), Action: specs.ActAllow},
		},
	}
	for _, p := range allowedPersonalities {
		profile.Syscalls = append(profile.Syscalls, specs.LinuxSyscall{Names: []string{"personality"},
			Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: p, Op: specs.OpEqualTo}}})
	}
	held := capabilitySet(caps)
	if !held["CAP_SYS_ADMIN"] {
		profile.Syscalls = append(profile.Syscalls, restrictedCloneRules()...)
	}
	if extra := capabilityAllowedSyscalls(held); len(extra) > 0 {
		profile.Syscalls = append(profile.Syscalls, specs.LinuxSyscall{Names: extra, Action: specs.ActAllow})
	}
	if held["CAP_SYS_ADMIN"] {
		profile.Syscalls = append(profile.Syscalls, specs.LinuxSyscall{Names: []string{"clone"}, Action: specs.ActAllow})
	}
	return profile
}

// restrictedCloneRules allow clone without namespace flags (its flags are
// argument 0 on x86 and arm64) and make clone3, whose flags live in memory
// seccomp cannot read, fail with ENOSYS so that libc falls back to clone.
func restrictedCloneRules() []specs.LinuxSyscall {
	enosys := errnoENOSYS
	return []specs.LinuxSyscall{
		{Names: []string{"clone"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: namespaceCloneFlags, ValueTwo: 0, Op: specs.OpMaskedEqual}}},
		{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
	}
}

// capabilityAllowedSyscalls lists, without repeats and in a stable order,
// the calls unlocked by the held capabilities.
func capabilityAllowedSyscalls(held map[string]bool) []string {
	seen := map[string]bool{}
	var names []string
	for _, c := range allCapabilities {
		if !held[c] {
			continue
		}
		for _, name := range capabilitySyscalls[c] {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	return names
}

// nativeArchitectures are the seccomp architectures a container on goarch
// may run code for: the native one and its 32-bit companions.
func nativeArchitectures(goarch string) []specs.Arch {
	switch goarch {
	case "amd64":
		return []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	case "386":
		return []specs.Arch{specs.ArchX86}
	default:
		return nil
	}
}
