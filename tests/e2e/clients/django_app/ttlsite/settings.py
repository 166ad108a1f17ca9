"""A Django project as many are configured: naive local times (USE_TZ = False) in New York.

The database comes from the environment (tests/e2e/django.sh starts the cluster)."""
import os

SECRET_KEY = "jsonb_ttl e2e"
DEBUG = False
USE_TZ = False
TIME_ZONE = "America/New_York"
INSTALLED_APPS = ["shop"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["PGDATABASE"],
        "USER": "postgres",
        "HOST": "127.0.0.1",
        "PORT": os.environ["PGPORT"],
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
