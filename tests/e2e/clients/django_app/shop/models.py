from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class Session(models.Model):
    """Expires at `expires`, a DateTimeField: with USE_TZ = False, a naive New York time in a
    timestamp column. TTL index: migration 0002."""

    key = models.CharField(max_length=40, unique=True)
    expires = models.DateTimeField()


class Event(models.Model):
    """Expires at data["at"], a naive datetime DjangoJSONEncoder writes as an ISO string
    without an offset. TTL index with time_zone => 'America/New_York': migration 0002."""

    name = models.CharField(max_length=40)
    data = models.JSONField(encoder=DjangoJSONEncoder)


class Visit(models.Model):
    """References a Session. Django cascades in Python, not in the database: its foreign key
    is DEFERRABLE INITIALLY DEFERRED, NO ACTION."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE)
