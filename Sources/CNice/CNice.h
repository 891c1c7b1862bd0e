/* libnice (Debian's libnice-dev): the agent's local addresses, which webrtcbin 1.22 does
 * not expose. Headers only; webrtcbin's nice plugin already links the library. */
#include <agent.h>
#include <interfaces.h>
