from django.db import migrations


class Migration(migrations.Migration):
    """The TTL indexes, made by Django's own migration runner in its own connection (whose
    TimeZone, with USE_TZ = False, is settings.TIME_ZONE)."""

    dependencies = [("shop", "0001_initial")]

    operations = [
        migrations.RunSQL(
            "CREATE EXTENSION IF NOT EXISTS jsonb_ttl",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RunSQL(
            "SELECT ttl_index_create('shop_session', 'expires', 0)",
            reverse_sql="SELECT ttl_index_drop('shop_session')",
        ),
        migrations.RunSQL(
            "SELECT ttl_index_create('shop_event', 'data.at', 0, time_zone => 'America/New_York')",
            reverse_sql="SELECT ttl_index_drop('shop_event')",
        ),
    ]
