package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// Sockets tried, as node paths.
const (
	privateSocket   = "/run/systemd/private"
	systemBusSocket = "/run/dbus/system_bus_socket"
)

// connect connects to systemd under hostRoot ("" for "/"): its private
// socket, else the system bus.
func connect(ctx context.Context, hostRoot string) (*sddbus.Conn, error) {
	root := hostRoot
	if root == "" {
		root = "/"
	}
	var errs []error
	for _, sock := range []struct {
		path  string
		hello bool
	}{{privateSocket, false}, {systemBusSocket, true}} {
		p := filepath.Join(root, sock.path)
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, err)
			continue
		}
		conn, err := sddbus.NewConnection(dialer(ctx, p, sock.hello))
		if err == nil {
			// The private socket accepts the connection but may refuse the
			// first call; ask something cheap to find out.
			if _, err = conn.GetManagerProperty("Version"); err == nil {
				return conn, nil
			}
			conn.Close()
		}
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	return nil, fmt.Errorf("connect to systemd: %w", errors.Join(errs...))
}

// dialer connects to the socket at p, authenticated as this process's
// user, saying hello first on a bus.
func dialer(ctx context.Context, p string, hello bool) func() (*dbus.Conn, error) {
	return func() (*dbus.Conn, error) {
		c, err := dbus.Dial("unix:path="+p, dbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if err := c.Auth([]dbus.Auth{dbus.AuthExternal(fmt.Sprint(os.Getuid()))}); err != nil {
			c.Close()
			return nil, err
		}
		if hello {
			if err := c.Hello(); err != nil {
				c.Close()
				return nil, err
			}
		}
		return c, nil
	}
}
