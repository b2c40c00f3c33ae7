// Package upgrade replaces a running Sluice server with a new process, a
// new binary or the same one, without closing its ports: no client is
// refused, and connections already open finish on the old process.
//
// On a signal the old process starts its successor, the same executable
// path with the same arguments, handing it copies of its listening sockets
// (sluice.Engine.DupListeners) as extra descriptors, and their names in
// the environment variable Env. The successor takes each socket up where
// it would have bound its address (sluice.WithListenerFiles), serves, and
// says it is ready (Ready) over a pipe; only then does the old process
// stop accepting (sluice.Engine.StopAccepting) and let its connections
// finish. Until it stops accepting, both accept from the same sockets;
// connections neither has accepted yet wait in the socket's queue, so the
// hand-over refuses nothing. A successor that fails to start, or is not
// ready within Config.ReadyTimeout, is killed, and the old process serves
// on.
//
// A process started by its service manager with sockets of its own
// (systemd's socket activation, sluice.ListenFDs) finds them through the
// same Upgrader, and hands them on the same way.
//
//	up, err := upgrade.New(upgrade.Config{PIDFile: "/run/echo.pid", Signal: syscall.SIGHUP})
//	eng, err := sluice.Start(h, up.Default("tcp://:9000"), sluice.WithListenerFiles(up.Files()))
//	up.Ready()
//	switch up.Wait(eng) {
//	case upgrade.HandedOver:
//		eng.StopAccepting(drainCtx) // connections finish here
//	}
//	eng.Stop(ctx)
//	up.Close()
package upgrade

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicenet/sluice"
)

// Env is the environment variable by which a process tells its successor
// the names of the listening sockets it hands it: each query-escaped,
// separated by commas, in the order of the descriptors from 4 on.
// Descriptor 3 is the pipe on which the successor says it is ready.
const Env = "SLUICE_UPGRADE"

// readyFD is the successor's descriptor of the readiness pipe; the
// listeners follow it.
const readyFD = 3

// DefaultReadyTimeout is how long Upgrade waits for its successor to say
// it is ready, unless Config.ReadyTimeout says otherwise.
const DefaultReadyTimeout = time.Minute

var (
	// ErrUpgraded is returned by Upgrade once a successor has taken over:
	// a process hands its listeners on once.
	ErrUpgraded = errors.New("upgrade: a successor has taken over already")

	// ErrNotReady is returned by Upgrade for a successor that exited, or
	// was killed for taking longer than Config.ReadyTimeout, before it
	// said it was ready.
	ErrNotReady = errors.New("upgrade: the successor did not become ready")

	// ErrMalformed is returned by New for an Env it cannot read.
	ErrMalformed = errors.New("upgrade: malformed " + Env)
)

// Config is what New takes.
type Config struct {
	// PIDFile, when set, is where the process's ID is written: by New in
	// a process started afresh, which catches the signals from then on,
	// and by Ready in a successor, replacing its predecessor's only once
	// it serves. A service manager or a script finds the process to
	// signal there. Close removes it if it still names this process.
	PIDFile string
	// ReadyTimeout bounds how long Upgrade waits for its successor to say
	// it is ready; zero or less means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Signal, when not nil, is the signal on which Wait starts an upgrade,
	// such as SIGHUP (ParseSignal).
	Signal os.Signal
	// Logf, when set, is told of what Wait does: a signal, an upgrade and
	// how it went.
	Logf func(format string, args ...any)
}

// An Upgrader hands a process's listeners to its successor and takes them
// from its predecessor. Its methods are safe from any goroutine.
type Upgrader struct {
	cfg   Config
	files []*os.File // handed to this process, for the engine
	ready *os.File   // the predecessor's readiness pipe; nil without one

	stops    chan os.Signal // SIGINT, SIGTERM, caught from New on
	upgrades chan os.Signal // Config.Signal, caught from New on

	mu       sync.Mutex
	readyErr error // what Ready said; set once Ready has run
	readyRan bool
	upgraded bool          // a successor has taken over
	exit     chan struct{} // closed once one has
}

// New returns the process's Upgrader, with the listening sockets handed to
// it: by its predecessor, through Env, or else by its service manager
// (sluice.ListenFDs). Both variables are removed from the environment, so
// that processes this one starts do not take the sockets for theirs. From
// now on the process catches SIGINT, SIGTERM and Config.Signal for Wait,
// so that one that comes before Wait is not lost, nor ends the process.
func New(cfg Config) (*Upgrader, error) {
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	u := &Upgrader{cfg: cfg, exit: make(chan struct{})}
	if err := u.inherit(); err != nil {
		return nil, err
	}
	u.stops = make(chan os.Signal, 1)
	signal.Notify(u.stops, os.Interrupt, syscall.SIGTERM)
	if cfg.Signal != nil {
		u.upgrades = make(chan os.Signal, 1)
		signal.Notify(u.upgrades, cfg.Signal)
	}
	if u.ready == nil && cfg.PIDFile != "" {
		if err := writePID(cfg.PIDFile); err != nil {
			u.release()
			return nil, err
		}
	}
	return u, nil
}

// inherit takes the sockets and the readiness pipe handed to the process.
func (u *Upgrader) inherit() error {
	names, handed := os.LookupEnv(Env)
	os.Unsetenv(Env)
	if !handed {
		files, err := sluice.ListenFDs()
		u.files = files
		return err
	}
	var list []string
	if names != "" {
		for _, n := range strings.Split(names, ",") {
			name, err := url.QueryUnescape(n)
			if err != nil {
				return fmt.Errorf("%w: %q: %v", ErrMalformed, names, err)
			}
			list = append(list, name)
		}
	}
	closeOnExec(readyFD)
	u.ready = os.NewFile(readyFD, "upgrade-ready")
	for i, name := range list {
		fd := readyFD + 1 + i
		closeOnExec(fd)
		u.files = append(u.files, os.NewFile(uintptr(fd), name))
	}
	return nil
}

// Files returns the listening sockets handed to the process, each named
// by the address, or the socket unit, it serves, for
// sluice.WithListenerFiles, which takes them over. It returns none when
// the process was started afresh.
func (u *Upgrader) Files() []*os.File { return u.files }

// Default returns addr, the address a program listens on unless told
// otherwise, or "" when sockets were handed to the process and none of
// them is named addr: a process its service manager started with sockets
// of its own serves those instead, and a successor serves addr from the
// socket its predecessor had bound to it.
func (u *Upgrader) Default(addr string) string {
	if len(u.files) == 0 {
		return addr
	}
	for _, f := range u.files {
		if f.Name() == addr {
			return addr
		}
	}
	return ""
}

// Ready says the process serves: in a successor it writes the PID file
// and tells its predecessor that it may stop accepting; and it tells
// systemd (sd_notify,
// when NOTIFY_SOCKET is set) that the service is ready and that this
// process is its main one, so that a unit with Type=notify and
// NotifyAccess=all follows the upgrade. Call it once the engine has
// started (sluice.Start returned). Later calls return what the first did.
func (u *Upgrader) Ready() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.readyRan {
		return u.readyErr
	}
	u.readyRan = true
	var errs []error
	if u.ready != nil {
		if u.cfg.PIDFile != "" {
			errs = append(errs, writePID(u.cfg.PIDFile))
		}
		_, err := u.ready.Write([]byte("ready\n"))
		errs = append(errs, err, u.ready.Close())
	}
	errs = append(errs, notify(fmt.Sprintf("READY=1\nMAINPID=%d", os.Getpid())))
	u.readyErr = errors.Join(errs...)
	return u.readyErr
}

// writePID writes the process's ID to path, whole or not at all: a
// reader never sees a file half written.
func writePID(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(tmp, "%d\n", os.Getpid())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Upgrade starts the process's successor with copies of eng's listeners
// and waits until it is ready, for at most Config.ReadyTimeout, then
// returns its ID. The successor is the executable this process runs,
// found again by its path (so that a new binary put in its place takes
// over), with the same arguments and environment, its standard input,
// output and error this process's. From the moment it returns, a
// successor serves; the caller stops accepting and lets its connections
// finish, and Exited's channel is closed. A successor that exits, or is
// not ready in time (it is then killed), fails it with an error wrapping
// ErrNotReady, and this process goes on as before; one upgrade runs at a
// time, and after one has succeeded Upgrade returns ErrUpgraded.
func (u *Upgrader) Upgrade(eng sluice.Engine) (pid int, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.upgraded {
		return 0, ErrUpgraded
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	files, err := eng.DupListeners()
	if err != nil {
		return 0, err
	}
	defer closeAll(files)
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = url.QueryEscape(f.Name())
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(withoutEnv(os.Environ()), Env+"="+strings.Join(names, ","))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = append([]*os.File{w}, files...)
	err = cmd.Start()
	w.Close() // the successor's copy is the pipe's only writer now
	if err != nil {
		return 0, err
	}
	if err := u.awaitReady(cmd, r); err != nil {
		return 0, err
	}
	pid = cmd.Process.Pid
	cmd.Process.Release() // it outlives this process, which need not reap it
	u.upgraded = true
	close(u.exit)
	return pid, nil
}

// awaitReady waits for the successor cmd to say, on r, that it is ready,
// and reaps it if it does not.
func (u *Upgrader) awaitReady(cmd *exec.Cmd, r *os.File) error {
	said := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		_, err := io.ReadFull(r, b) // EOF: it exited, or closed the pipe unready
		said <- err
	}()
	timer := time.NewTimer(u.cfg.ReadyTimeout)
	defer timer.Stop()
	select {
	case err := <-said:
		if err == nil {
			return nil
		}
		err = cmd.Wait()
		return fmt.Errorf("%w: it exited first (%v)", ErrNotReady, err)
	case <-timer.C:
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("%w: not ready after %v; killed", ErrNotReady, u.cfg.ReadyTimeout)
	}
}

// Exited returns a channel that is closed once a successor has taken
// over (Upgrade succeeded).
func (u *Upgrader) Exited() <-chan struct{} { return u.exit }

// Reason is why Wait returned.
type Reason int

const (
	// Stopped: a stop signal came (SIGINT, SIGTERM).
	Stopped Reason = iota
	// EngineStopped: the engine stopped by itself.
	EngineStopped
	// HandedOver: a successor took the listeners over. The process stops
	// accepting and lets its connections finish.
	HandedOver
)

// String names the reason.
func (r Reason) String() string {
	switch r {
	case Stopped:
		return "stopped by a signal"
	case EngineStopped:
		return "the engine stopped"
	case HandedOver:
		return "handed over to a successor"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Wait serves until the process should stop, and says why: SIGINT or
// SIGTERM came, or the engine stopped by itself, or, each time
// Config.Signal comes, Upgrade ran and its successor took over. An
// upgrade that fails is told to Config.Logf, and the process serves on.
// Once Wait has returned, Config.Signal is ignored (the process is on its
// way out), and a second SIGINT or SIGTERM ends the process at once.
func (u *Upgrader) Wait(eng sluice.Engine) Reason {
	defer u.release()
	for {
		select {
		case <-u.stops:
			return Stopped
		case <-eng.Done():
			return EngineStopped
		case <-u.upgrades:
			u.cfg.Logf("upgrade: %v: starting the successor", u.cfg.Signal)
			start := time.Now()
			pid, err := u.Upgrade(eng)
			if err != nil {
				u.cfg.Logf("upgrade: failed, serving on: %v", err)
				continue
			}
			u.cfg.Logf("upgrade: process %d took over after %v", pid, time.Since(start).Round(time.Millisecond))
			return HandedOver
		}
	}
}

// release lets the signals New caught go: SIGINT and SIGTERM get their
// default action again, and Config.Signal is ignored.
func (u *Upgrader) release() {
	signal.Stop(u.stops)
	if u.cfg.Signal != nil {
		signal.Ignore(u.cfg.Signal)
	}
}

// Close lets go of what the Upgrader holds: the signals, as Wait does when
// it returns, the PID file, which it removes if it still names this
// process (a successor has written its own), and the sockets handed to
// the process that were not served.
func (u *Upgrader) Close() error {
	u.release()
	closeAll(u.files)
	if u.cfg.PIDFile == "" {
		return nil
	}
	b, err := os.ReadFile(u.cfg.PIDFile)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		return nil
	}
	return os.Remove(u.cfg.PIDFile)
}

// closeAll closes files, whether or not they are closed already.
func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// withoutEnv returns env without Env.
func withoutEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, Env+"=") {
			out = append(out, kv)
		}
	}
	return out
}
