package system

import (
	"slices"

	"github.com/sdengine/engine/cli/command"
)

// Commands are the commands of the "docker system" group.
var Commands = []command.Entry{
	{Names: []string{"info"}, New: NewInfoCommand},
	{Names: []string{"events"}, New: NewEventsCommand},
	{Names: []string{"prune"}, New: NewPruneCommand},
}

// TopLevelCommands are the commands of this package docker offers at the
// top level: the group's but prune (at the top level there is none), and
// version and inspect, which have no group here.
var TopLevelCommands = slices.Concat(command.TopLevel(Commands, "prune"), []command.Entry{
	{Names: []string{"version"}, New: NewVersionCommand},
	{Names: []string{"inspect"}, New: NewInspectCommand},
})
