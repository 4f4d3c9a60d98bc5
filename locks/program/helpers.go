package program

import _ "embed"

var (
	//go:embed php/lockproto.php
	lockprotoPHP string
	//go:embed python/lockproto_asyncio.py
	lockprotoAsyncioPy string
)

// ProtocolHelpers are the program side of the lock protocol in each
// language the in-tree programs use, by file name (lockproto.py and
// routes.py, lockproto_asyncio.py for a program on an asyncio event
// loop, lockproto.js, lockproto.php): a program of its own beside
// them imports them (Python finds them in its script's folder, PHP
// requires them, Node is given them before its source).
func ProtocolHelpers() map[string]string {
	return map[string]string{"lockproto.py": lockprotoPy, "routes.py": routesPy, "lockproto_asyncio.py": lockprotoAsyncioPy,
		"lockproto.js": lockprotoJS, "lockproto.php": lockprotoPHP}
}
