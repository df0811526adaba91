"""The radio access network: cell geometry, links, resource sharing, background traffic."""
