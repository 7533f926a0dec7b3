package systemdprofile

import specs "github.com/opencontainers/runtime-spec/specs-go"

// allowances are the rules that systemd needs beyond the daemon's default
// seccomp profile when it runs as PID 1 with Docker's default capabilities
// (no CAP_SYS_ADMIN, no CAP_SYS_BOOT). None are needed. This was measured
// with Debian 12's systemd 252 (docs/seccomp-systemd.md). With or without
// the calls below it boots to "running" with 0 failed units, and its
// services and sandboxed units behave the same:
//
//   - mount, umount2: without CAP_SYS_ADMIN the kernel refuses them with
//     EPERM, the errno the profile's default action returns. systemd
//     expects that in a container and carries on.
//   - unshare, and clone with CLONE_NEW* flags: the same, with one
//     exception. CLONE_NEWUSER needs no capability, so allowing it lets any
//     process in the container create a user namespace and mount there.
//     That is the hole the 2015 fork's unconditional allowance opened, so
//     it stays refused, as in any container with Docker's default profile.
//     systemd asks for a user namespace only for PrivateUsers=yes (no unit
//     of the image does); such a unit fails with 217/USER, as it does
//     there. Its other namespace options (PrivateTmp=, ProtectSystem=, and
//     so on) are skipped as "containerized execution" whichever of seccomp
//     and the kernel says EPERM.
//   - reboot: in a PID namespace without CAP_SYS_BOOT the kernel refuses
//     it with EPERM too. systemd-shutdown then exits, which the engine sees
//     as a clean halt (exit code 0).
//   - name_to_handle_at: the default profile already allows it.
//
// A capability added with --cap-add makes the default profile allow the
// matching calls (CAP_SYS_ADMIN: mount, umount2, unshare, namespace
// flags; CAP_SYS_BOOT: reboot), exactly as Docker does. So there is no
// combination in which systemd needs more from seccomp than from the
// capability set.
var allowances []specs.LinuxSyscall

// AllowSyscalls adds to p what systemd needs from seccomp in a container
// with the systemd profile. p must be the daemon's default profile; a
// profile the user chose (--security-opt seccomp=) is used as written, and
// the caller does not call this for it. Measured, the set is empty (see
// allowances), so p keeps refusing user namespaces (unshare and clone with
// CLONE_NEWUSER; clone3 returns ENOSYS) exactly as the plain default
// profile does. A nil p (unconfined or privileged) stays nil.
func AllowSyscalls(p *specs.LinuxSeccomp) {
	if p == nil {
		return
	}
	p.Syscalls = append(p.Syscalls, allowances...)
}
