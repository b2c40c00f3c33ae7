package upgrade

import (
	"net"
	"os"
)

// notify sends state to the service manager over NOTIFY_SOCKET, as
// sd_notify does, when the variable is set; an abstract socket's name
// begins with '@'.
func notify(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] == '@' {
		path = "\x00" + path[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}
