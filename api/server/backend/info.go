package backend

import "github.com/docker/docker/api/types/system"

// InfoBase is Docker's /info body; it is embedded so that our own fields
// sit beside Docker's at the top level of the JSON object.
type InfoBase = system.Info
