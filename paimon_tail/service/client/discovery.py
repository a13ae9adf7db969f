"""Where a table's service is: its registration (``<table>/service/``) read and checked, and the route the
coordinator answered (or the registration's own assignment while none answers), kept for the next lookups. Both
transports ask the coordinator through it; the asking itself (``Executors``) is theirs."""
from __future__ import annotations

import time
from typing import Callable, Optional

from ...table_meta import TableMeta
from ..protocol import PROTOCOL_VERSION
from ..protocol import lookup_pb2 as pb
from ..protocol import registration as regmod
from ..protocol.security import Security
from .call_failures import check_registration
from .deadline import Deadline
from .route import Route

START_GRACE = 5.0  # seconds a lookup waits for a registration that is not there (a serve that is starting)


class Discovery:
    """One table's registration and its cached ``Route``. ``meta`` is the table's current metadata (the client
    replaces it when it reads a newer schema); ``on_wait`` is told (once a lookup) when it waits for a service to be
    registered."""

    def __init__(self, meta: TableMeta, security: Security, on_wait: Optional[Callable[[str], None]] = None) -> None:
        self.meta = meta
        self.name = meta.name
        self.security = security
        self.on_wait = on_wait
        self.route: Optional[Route] = None

    def executors_request(self) -> pb.ExecutorsRequest:
        return pb.ExecutorsRequest(table=self.name, protocol_version=PROTOCOL_VERSION)

    def routed(self, reg: regmod.Registration, resp: Optional[pb.ExecutorsResponse]) -> Optional[Route]:
        """The route an address server answered (``resp``), or, when none did, the registration's own executors
        (they answer from what they hold) unless standbys may take over; kept for the next lookups."""
        if resp is not None:
            self.route = Route(reg, resp)
        elif not reg.standbys:
            self.route = Route.from_registration(reg)
        else:
            return None
        return self.route

    def registration(self, deadline: Optional[Deadline] = None) -> regmod.Registration:
        """The service's registration; with ``deadline``, one that is not there yet is waited for a while (a
        ``serve`` starting: ``serve db.t &`` then ``lookup db.t 1`` at once), within the deadline. One that is
        there but unreadable is named with what is wrong with it."""
        meta = self.meta
        path = regmod.service_file(meta.branch)
        try:
            text = meta.read_text(path)
            if text is None and deadline is not None:  # (a file that is there but unreadable is no service starting)
                until = min(deadline.at, time.monotonic() + START_GRACE)
                if self.on_wait is not None and until > time.monotonic():
                    self.on_wait(f"waiting for {self.name} to be served")
                while text is None and time.monotonic() < until:
                    time.sleep(0.05)
                    text = meta.read_text(path)
            why = regmod.problem_of(text)
        except ValueError as e:  # not UTF-8
            from ...storage.files import problem

            text, why = None, problem(e)
        reg = regmod.parse(text)
        unreadable = f"its registration file {meta.path}/{path} {why.replace('it ', '', 1)}" \
            if reg is None and why else None
        return check_registration(reg, self.name, self.security.tls, bool(self.security.token), unreadable)


def discovery_deadline(reg: regmod.Registration, deadline: Deadline) -> Deadline:
    """With standbys listed, one of them takes over when the active is gone: wait for it, within the whole
    deadline. Without, an address server refusing connections means the service is gone (or restarting): try
    briefly; an expired registration more briefly still (a service that cannot reach its storage cannot renew
    it, yet answers)."""
    if reg.standbys:
        return deadline
    return deadline.sooner(2.0 if reg.is_live() else 0.5)


__all__ = ["Discovery", "START_GRACE", "discovery_deadline"]
