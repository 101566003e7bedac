// The one C header the ledger needs: libpq's client API (Debian: libpq-dev).
#include <libpq-fe.h>
