"""Writes rows through the Django ORM, as the app would:
  python drive.py write     sessions and events, some living an hour, some 4 seconds, and a
                            visit that references one of the short sessions
  python drive.py sessions  the keys of the sessions left, one per line
  python drive.py events    the names of the events left"""
import os
import sys
from datetime import datetime, timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ttlsite.settings")
import django  # noqa: E402

django.setup()
from shop.models import Event, Session, Visit  # noqa: E402

mode = sys.argv[1]
if mode == "write":
    now = datetime.now()  # naive, New York time (USE_TZ = False)
    for i in range(10):
        Session.objects.create(key=f"hour{i}", expires=now + timedelta(hours=1))
        Session.objects.create(key=f"brief{i}", expires=now + timedelta(seconds=4))
        Event.objects.create(name=f"hour{i}", data={"at": now + timedelta(hours=1)})
        Event.objects.create(name=f"brief{i}", data={"at": now + timedelta(seconds=4)})
    Visit.objects.create(session=Session.objects.get(key="brief0"))
elif mode == "sessions":
    print("\n".join(Session.objects.order_by("key").values_list("key", flat=True)))
elif mode == "events":
    print("\n".join(Event.objects.order_by("name").values_list("name", flat=True)))
else:
    sys.exit(f"unknown mode {mode}")
