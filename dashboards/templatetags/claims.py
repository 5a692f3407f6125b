from django import template

register = template.Library()


@register.filter
def claim_of(check, key: str):
    """`{% with p=check|claim_of:"e2e_p99_ms" %}`: one claim of a ClaimCheck, or None."""
    return check.claim(key) if check else None
