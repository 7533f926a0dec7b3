package main

import (
	"log/slog"
	"strings"

	"github.com/google/nftables"
)

// ourTablePrefix names the nftables tables our daemon makes for the
// bench's bridges ("sdengine-<bridge>", libnetwork/bridge): the daemon
// removes them when it stops; after a crash the clean-up does.
const ourTablePrefix = "sdengine-sdbench-"

func deleteOurNftTables() {
	c, err := nftables.New()
	if err != nil {
		return
	}
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return
	}
	for _, t := range ts {
		if strings.HasPrefix(t.Name, ourTablePrefix) {
			slog.Warn("nftables table left behind, deleting", "table", t.Name)
			c.DelTable(t)
		}
	}
	if err := c.Flush(); err != nil {
		slog.Warn("delete nftables tables", "err", err)
	}
}
