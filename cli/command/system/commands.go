package system

import "github.com/sdengine/engine/cli/command"

// Commands are the commands of the "docker system" group.
var Commands = []command.Entry{
	{Names: []string{"info"}, New: NewInfoCommand},
	{Names: []string{"events"}, New: NewEventsCommand},
	{Names: []string{"prune"}, New: NewPruneCommand},
}

// TopLevelCommands are the commands of this package docker offers at the
// top level.
var TopLevelCommands = []command.Entry{
	{Names: []string{"version"}, New: NewVersionCommand},
	{Names: []string{"info"}, New: NewInfoCommand},
	{Names: []string{"inspect"}, New: NewInspectCommand},
	{Names: []string{"events"}, New: NewEventsCommand},
}
